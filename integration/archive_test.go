package integration_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name string
	typ  byte
	data []byte
}

// makeTarGz returns the entries as a tar.gz archive.
func makeTarGz(t testing.TB, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.data)), ModTime: time.Unix(1714564800, 0)}
		switch e.typ {
		case tar.TypeDir:
			h.Mode, h.Size = 0o755, 0
		case tar.TypeSymlink, tar.TypeLink:
			h.Linkname, h.Size = "/etc/passwd", 0
		case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write(e.data)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestArchiveUpload sends a tar.gz of a 400-file tree in 4 directories
// (2,000 in 20 in a soak) with one PUT and reads every file back through
// the mount; then a zip.
func TestArchiveUpload(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	var entries []tarEntry
	want := map[string][]byte{}
	files := bySoak(400, 2000)
	for i := range files {
		if i%100 == 0 {
			entries = append(entries, tarEntry{name: fmt.Sprintf("src/pkg%02d/", i/100), typ: tar.TypeDir})
		}
		name := fmt.Sprintf("src/pkg%02d/file%04d.go", i/100, i)
		data := pseudoRandom(i*13%9000, uint64(i))
		entries = append(entries, tarEntry{name: name, typ: tar.TypeReg, data: data})
		want["/tree/"+name] = data
	}
	archive := makeTarGz(t, entries)
	u := beginUpload(t, d, map[string]any{"path": "/tree", "format": "tar.gz", "sha256": sha256hex(archive)})
	r := put(t, u, bytes.NewReader(archive), int64(len(archive)), "")
	if r.Status != http.StatusOK || !r.Env.Success {
		t.Fatalf("PUT: %d %+v", r.Status, r.Env.Error)
	}
	if totals, _ := r.Env.Data["totals"].(map[string]any); totals["files"] != float64(files) {
		t.Fatalf("totals %v", r.Env.Data["totals"])
	}
	for p, data := range want {
		got, err := os.ReadFile(d.path(p))
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s through the mount: %d bytes, %v; want the %d sent", p, len(got), err, len(data))
		}
	}

	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for i := range 20 {
		w, err := zw.Create(fmt.Sprintf("docs/page%d.txt", i))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(w, "page %d\n", i)
	}
	zw.Close()
	u = beginUpload(t, d, map[string]any{"path": "/zipped", "format": "zip"})
	if r := put(t, u, bytes.NewReader(zbuf.Bytes()), int64(zbuf.Len()), ""); !r.Env.Success {
		t.Fatalf("zip PUT: %+v", r.Env.Error)
	}
	if got, err := os.ReadFile(d.path("/zipped/docs/page7.txt")); err != nil || string(got) != "page 7\n" {
		t.Errorf("/zipped/docs/page7.txt: %q, %v", got, err)
	}
}

// TestArchiveUploadRefused sends archives with one bad entry among good
// ones: each is refused naming the entry, and the depot is unchanged.
func TestArchiveUploadRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/keep.txt", "content": "kept"})
	good := []tarEntry{{name: "a.txt", typ: tar.TypeReg, data: []byte("a")}, {name: "dir/b.txt", typ: tar.TypeReg, data: []byte("b")}}
	tests := []struct {
		name    string
		bad     tarEntry
		errType string
		want    string
	}{
		{"symlink", tarEntry{name: "link", typ: tar.TypeSymlink}, "validation", `"link"`},
		{"hard link", tarEntry{name: "hard", typ: tar.TypeLink}, "validation", `"hard"`},
		{"device", tarEntry{name: "dev/null", typ: tar.TypeChar}, "validation", `"dev/null"`},
		{"fifo", tarEntry{name: "pipe", typ: tar.TypeFifo}, "validation", `"pipe"`},
		{"absolute", tarEntry{name: "/etc/passwd", typ: tar.TypeReg, data: []byte("x")}, "security", `"/etc/passwd"`},
		{"dot-dot", tarEntry{name: "dir/../../escape", typ: tar.TypeReg, data: []byte("x")}, "security", `"dir/../../escape"`},
		{"twice", tarEntry{name: "a.txt", typ: tar.TypeReg, data: []byte("again")}, "validation", "twice"},
	}
	before := snapshot(t, d.mount)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			archive := makeTarGz(t, append(append([]tarEntry{}, good...), tt.bad))
			u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": "tar.gz"})
			r := put(t, u, bytes.NewReader(archive), int64(len(archive)), "")
			if r.Env.Success || r.Env.Error.Type != tt.errType || !strings.Contains(r.Env.Error.Message, tt.want) {
				t.Errorf("PUT: %d %+v, want a %s error naming %s", r.Status, r.Env.Error, tt.errType, tt.want)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		archive := makeTarGz(t, good)
		archive = archive[:len(archive)/2]
		u := beginUpload(t, d, map[string]any{"path": "/unpacked", "format": "tar.gz"})
		if r := put(t, u, bytes.NewReader(archive), int64(len(archive)), ""); r.Env.Success {
			t.Errorf("a truncated archive was accepted: %v", r.Env.Data)
		}
	})
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused archives changed the mount:\n%s", diff)
	}
}
