package integration_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// storedZip returns the members as a zip whose members are stored (not
// deflated), so a test can damage their bytes in place.
func storedZip(t testing.TB, members map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, data := range members {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDamagedArchiveStoresNothing: an archive that cannot be read whole is
// refused with a 4xx naming the archive (and the member, when one is
// concerned), with no "internal" error and no ERROR line, and stores
// nothing: a tar.gz whose gzip checksum is wrong, a tar cut short at a
// member boundary or in a member, a zip failing a member's CRC, and bytes
// that are not a zip.
func TestDamagedArchiveStoresNothing(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/keep.txt", "content": "kept"})
	files := []tarEntry{{name: "a.txt", typ: tar.TypeReg, data: []byte("alpha")}, {name: "b.txt", typ: tar.TypeReg, data: []byte("beta")}}
	tgz := makeTarGz(t, files)
	badSum := append([]byte(nil), tgz...)
	badSum[len(badSum)-6] ^= 0xff // the gzip trailer's CRC-32
	plain := ungzip(t, tgz)
	zipped := storedZip(t, map[string]string{"a.txt": "alpha", "b.txt": "beta"})
	badCRC := bytes.Replace(zipped, []byte("alpha"), []byte("alphb"), 1)

	tests := []struct {
		name, format string
		body         []byte
		want         []string // in the error message
	}{
		{"gzip checksum", "tar.gz", badSum, []string{"tar.gz archive", "damaged"}},
		{"tar without its end", "tar", plain[:512*4], []string{"tar archive", `"b.txt"`, "cut short"}},
		{"tar cut in a member", "tar", plain[:512*3+2], []string{"tar archive", `"b.txt"`, "damaged"}},
		{"zip CRC", "zip", badCRC, []string{"zip archive", `"a.txt"`, "damaged"}},
		{"not a zip", "zip", []byte(strings.Repeat("not a zip ", 100)), []string{"zip archive", "not a zip"}},
	}
	before := snapshot(t, d.mount)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": tt.format})
			r := put(t, u, bytes.NewReader(tt.body), int64(len(tt.body)), "")
			if r.Status != http.StatusBadRequest || r.Env.Success || r.Env.Error.Type != "validation" {
				t.Fatalf("PUT: %d %+v, want 400 validation", r.Status, r.Env.Error)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Env.Error.Message, w) {
					t.Errorf("message %q does not say %q", r.Env.Error.Message, w)
				}
			}
			if strings.Contains(r.Env.Error.Message+r.Env.Error.Instruction, "chunk") {
				t.Errorf("a PUT's refusal talks of chunks: %+v", r.Env.Error)
			}
		})
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("damaged archives changed the mount:\n%s", diff)
	}
	if lines := d.logLines("level=ERROR"); len(lines) > 0 {
		t.Errorf("a client's damaged archive was logged as a server error:\n%s", strings.Join(lines, "\n"))
	}
}

// ungzip returns the decompressed bytes of b.
func ungzip(t testing.TB, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRawPutSizeMismatchNamesFile: a PUT whose body is not the size the
// upload announced is refused naming the file, in the terms of a PUT.
func TestRawPutSizeMismatchNamesFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	u := beginUpload(t, d, map[string]any{"path": "/sized.bin", "size": 10})
	r := put(t, u, strings.NewReader("12345"), 5, "")
	if r.Env.Success || r.Status != http.StatusBadRequest || !strings.Contains(r.Env.Error.Message, "/sized.bin") ||
		strings.Contains(r.Env.Error.Message+r.Env.Error.Instruction, "chunk") {
		t.Fatalf("PUT of 5 bytes for 10 announced: %d %+v, want 400 naming /sized.bin, not chunks", r.Status, r.Env.Error)
	}
	u = beginUpload(t, d, map[string]any{"path": "/hashed.tar", "format": "tar", "sha256": strings.Repeat("0", 64)})
	body := ungzip(t, makeTarGz(t, []tarEntry{{name: "a", typ: tar.TypeReg, data: []byte("a")}}))
	r = put(t, u, bytes.NewReader(body), int64(len(body)), "")
	if r.Env.Success || !strings.Contains(r.Env.Error.Message, "tar archive") || strings.Contains(r.Env.Error.Message+r.Env.Error.Instruction, "chunk") {
		t.Fatalf("PUT of an archive with another sha256: %d %+v, want a refusal naming the archive", r.Status, r.Env.Error)
	}
	if _, err := os.Stat(d.path("/sized.bin")); err == nil {
		t.Error("the refused PUT stored its file")
	}
}

// TestGitArchiveUpload: the tar `git archive` writes (which starts with a
// pax global header holding the commit id) unpacks, files and empty
// directories alike.
func TestGitArchiveUpload(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	git := func(args ...string) []byte {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.org"}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return out
	}
	git("init", "-q")
	os.MkdirAll(filepath.Join(repo, "src", "pkg"), 0o755)
	os.WriteFile(filepath.Join(repo, "README"), []byte("readme\n"), 0o644)
	os.WriteFile(filepath.Join(repo, "src", "pkg", "main.go"), []byte("package main\n"), 0o644)
	git("add", ".")
	git("commit", "-q", "-m", "first")
	body := git("archive", "--format=tar", "HEAD")

	d := startDaemon(t, daemonConfig{transport: overHTTP})
	u := beginUpload(t, d, map[string]any{"path": "/repo", "format": "tar"})
	if r := put(t, u, bytes.NewReader(body), int64(len(body)), ""); !r.Env.Success {
		t.Fatalf("PUT of git archive: %d %+v", r.Status, r.Env.Error)
	}
	for p, want := range map[string]string{"/repo/README": "readme\n", "/repo/src/pkg/main.go": "package main\n"} {
		if got, err := os.ReadFile(d.path(p)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}
}

// TestArchiveDirectories: directory entries of a tar and of a zip become
// directories, empty ones included.
func TestArchiveDirectories(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	tgz := makeTarGz(t, []tarEntry{
		{name: "./", typ: tar.TypeDir}, // tar -C dir . writes the root first
		{name: ".git/", typ: tar.TypeDir},
		{name: ".git/", typ: tar.TypeDir}, // twice, as an appended tar may
		{name: "./.git/refs/", typ: tar.TypeDir},
		{name: ".git/refs/heads/", typ: tar.TypeDir},
		{name: ".git/branches/", typ: tar.TypeDir},
		{name: ".git/HEAD", typ: tar.TypeReg, data: []byte("ref: refs/heads/main\n")},
	})
	u := beginUpload(t, d, map[string]any{"path": "/t", "format": "tar.gz"})
	if r := put(t, u, bytes.NewReader(tgz), int64(len(tgz)), ""); !r.Env.Success {
		t.Fatalf("tar PUT: %d %+v", r.Status, r.Env.Error)
	}
	zipped := storedZip(t, map[string]string{"empty/": "", "full/f.txt": "f"})
	u = beginUpload(t, d, map[string]any{"path": "/z", "format": "zip"})
	if r := put(t, u, bytes.NewReader(zipped), int64(len(zipped)), ""); !r.Env.Success {
		t.Fatalf("zip PUT: %d %+v", r.Status, r.Env.Error)
	}
	onlyDirs := makeTarGz(t, []tarEntry{{name: "a/", typ: tar.TypeDir}, {name: "a/b/", typ: tar.TypeDir}})
	u = beginUpload(t, d, map[string]any{"path": "/dirs", "format": "tar.gz"})
	if r := put(t, u, bytes.NewReader(onlyDirs), int64(len(onlyDirs)), ""); !r.Env.Success {
		t.Fatalf("PUT of directories only: %d %+v", r.Status, r.Env.Error)
	}
	for _, p := range []string{"/t/.git/refs/heads", "/t/.git/branches", "/z/empty", "/z/full", "/dirs/a/b"} {
		if fi, err := os.Stat(d.path(p)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v, %v; want a directory", p, fi, err)
		}
	}
}
