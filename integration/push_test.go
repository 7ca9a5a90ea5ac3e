package integration_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPushAndReadBack pushes text, binary, chunked and filename-only content
// over each transport and reads it back through the mount with real
// programs.
func TestPushAndReadBack(t *testing.T) {
	t.Parallel()
	for _, tr := range []transportKind{overHTTP, overStdio} {
		t.Run(string(tr), func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, daemonConfig{transport: tr})
			local := t.TempDir()

			text := "héllo wörld\nsecond line\n"
			mtime := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
			env := d.mustCall("guide_cache_file", map[string]any{
				"path": "docs/readme.txt", "content": text, "mtime": mtime.Format(time.RFC3339),
			})
			checkReply(t, d, env, "/docs/readme.txt", []byte(text), "created")

			binary := make([]byte, 256)
			for i := range binary {
				binary[i] = byte(i)
			}
			env = d.mustCall("guide_cache_file", map[string]any{
				"path": "/bin/all-bytes.bin", "content": base64.StdEncoding.EncodeToString(binary), "encoding": "base64",
			})
			checkReply(t, d, env, "/bin/all-bytes.bin", binary, "created")

			big := pseudoRandom(bySoak(8<<20, 20<<20), 42)
			env = pushChunked(d, "/big/chunked.bin", big, 1<<20, "upload-"+string(tr), 7)
			if got := env.Data["sha256"]; got != sha256hex(big) {
				t.Errorf("chunked upload final sha256 = %v, want %s", got, sha256hex(big))
			}

			report := []byte("%PDF-1.4 pretend report\n")
			env = d.mustCall("guide_cache_file", map[string]any{
				"filename": `C:\Users\agent\report.pdf`, "content": string(report),
			})
			uploadPath, _ := env.Data["path"].(string)
			wantPrefix := "/uploads/" + sha256hex(report)[:16] + "/"
			if uploadPath != wantPrefix+"report.pdf" {
				t.Fatalf("filename-only upload placed at %q, want %sreport.pdf", uploadPath, wantPrefix)
			}
			mountPath, _ := env.Data["mount_path"].(string)
			if got := runProgram(t, "cat", mountPath); got != string(report) {
				t.Errorf("cat %s = %q, want %q", mountPath, got, report)
			}

			want := map[string][]byte{
				"/docs/readme.txt":   []byte(text),
				"/bin/all-bytes.bin": binary,
				"/big/chunked.bin":   big,
				uploadPath:           report,
			}
			for p, content := range want {
				host := d.path(p)
				if p == "/docs/readme.txt" {
					if got := runProgram(t, "cat", host); got != text {
						t.Errorf("cat %s = %q, want %q", p, got, text)
					}
				}
				sum := strings.Fields(runProgram(t, "sha256sum", host))[0]
				if sum != sha256hex(content) {
					t.Errorf("sha256sum %s = %s, want %s", p, sum, sha256hex(content))
				}
				copyPath := filepath.Join(local, filepath.Base(p))
				if err := os.WriteFile(copyPath, content, 0o600); err != nil {
					t.Fatal(err)
				}
				runProgram(t, "cmp", host, copyPath)
				size := strings.TrimSpace(runProgram(t, "stat", "-c", "%s", host))
				if size != strconv.Itoa(len(content)) {
					t.Errorf("stat size of %s = %s, want %d", p, size, len(content))
				}
			}
			if got := strings.TrimSpace(runProgram(t, "stat", "-c", "%Y", d.path("/docs/readme.txt"))); got != strconv.FormatInt(mtime.Unix(), 10) {
				t.Errorf("stat mtime = %s, want %d (the agent's mtime)", got, mtime.Unix())
			}

			var found []string
			for _, line := range strings.Split(strings.TrimSpace(runProgram(t, "find", d.mount, "-type", "f")), "\n") {
				found = append(found, strings.TrimPrefix(line, d.mount))
			}
			var wantPaths []string
			for p := range want {
				wantPaths = append(wantPaths, p)
			}
			slices.Sort(found)
			slices.Sort(wantPaths)
			if !slices.Equal(found, wantPaths) {
				t.Errorf("find -type f = %q, want %q", found, wantPaths)
			}
		})
	}
}

// checkReply checks a successful write's reply against what was pushed.
func checkReply(t *testing.T, d *daemon, env envelope, path string, content []byte, status string) {
	t.Helper()
	if env.Data["status"] != status {
		t.Errorf("%s: status %v, want %s", path, env.Data["status"], status)
	}
	if env.Data["path"] != path {
		t.Errorf("%s: reply path %v", path, env.Data["path"])
	}
	if env.Data["mount_path"] != d.path(path) {
		t.Errorf("%s: mount_path %v, want %s", path, env.Data["mount_path"], d.path(path))
	}
	if env.Data["sha256"] != sha256hex(content) {
		t.Errorf("%s: sha256 %v, want %s", path, env.Data["sha256"], sha256hex(content))
	}
	if size, _ := env.Data["size"].(float64); int(size) != len(content) {
		t.Errorf("%s: size %v, want %d", path, env.Data["size"], len(content))
	}
}

// TestListedFileIsAPlaceholder declares files with guide_list_directory:
// they appear with their declared size, and reading one fails with EIO
// until its content arrives (after --fetch-timeout, 2 s here rather than
// the default 30 s: TestFetchTimeout checks the timeout itself).
func TestListedFileIsAPlaceholder(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--fetch-timeout", "2s"}})
	mtime := time.Date(2023, 6, 7, 8, 9, 10, 0, time.UTC)
	d.mustCall("guide_list_directory", map[string]any{
		"path": "/repo",
		"entries": []any{
			map[string]any{"name": "main.go", "type": "file", "size": 1234, "mtime": mtime.Format(time.RFC3339)},
			map[string]any{"name": "pkg", "type": "directory", "entries": []any{
				map[string]any{"name": "util.go", "type": "file", "size": 10},
			}},
			map[string]any{"name": "empty", "type": "directory"},
		},
	})
	if got := strings.TrimSpace(runProgram(t, "stat", "-c", "%s %Y %F", d.path("/repo/main.go"))); got != "1234 "+strconv.FormatInt(mtime.Unix(), 10)+" regular file" {
		t.Errorf("stat placeholder = %q", got)
	}
	if got := strings.TrimSpace(runProgram(t, "stat", "-c", "%F", d.path("/repo/empty"))); got != "directory" {
		t.Errorf("explicit empty directory shows as %q", got)
	}
	if msg := runFailing(t, "cat", d.path("/repo/pkg/util.go")); !strings.Contains(msg, "Input/output error") {
		t.Errorf("cat of a placeholder: %q, want an I/O error", msg)
	}
	content := "package main\n"
	d.mustCall("guide_read_file", map[string]any{"path": "/repo/pkg/util.go", "content": content})
	if got := runProgram(t, "cat", d.path("/repo/pkg/util.go")); got != content {
		t.Errorf("after the content arrived cat = %q, want %q", got, content)
	}
}
