package integration_test

import (
	"fmt"
	"os"
	"path"
	"testing"
	"testing/fstest"
)

// TestMountPassesFSTest pushes a tree of 12 files, one in each of 12
// directories (60 in a soak), and runs Go's
// testing/fstest conformance checker over the mount from this process (not
// the one serving it), then checks every file's bytes, which fstest does not.
func TestMountPassesFSTest(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	want := map[string][]byte{}
	for i := range bySoak(12, 60) {
		p := fmt.Sprintf("tree/d%d/sub%d/file-%02d.txt", i%4, i%3, i)
		content := hexLines(pseudoRandom(1+i*997, uint64(i)))
		want[p] = content
		d.mustCall("guide_cache_file", map[string]any{"path": p, "content": string(content)})
	}
	d.mustCall("guide_list_directory", map[string]any{
		"path": "/tree/empty", "entries": []any{},
	})
	var names []string
	for p := range want {
		names = append(names, p)
	}
	fsys := os.DirFS(d.mount)
	if err := fstest.TestFS(fsys, names...); err != nil {
		t.Fatal(err)
	}
	for p, content := range want {
		got, err := os.ReadFile(d.path("/" + p))
		if err != nil || sha256hex(got) != sha256hex(content) {
			t.Errorf("%s: read %d bytes (%v), want %d bytes with sha256 %s", p, len(got), err, len(content), sha256hex(content))
		}
	}
	if info, err := os.Stat(d.path(path.Join("/tree", "empty"))); err != nil || !info.IsDir() {
		t.Errorf("explicit empty directory: %v, %v", info, err)
	}
}

// hexLines renders bytes as text lines so they can be sent as UTF-8.
func hexLines(b []byte) []byte {
	out := make([]byte, 0, len(b)*3)
	for i, c := range b {
		out = fmt.Appendf(out, "%02x", c)
		if i%32 == 31 {
			out = append(out, '\n')
		}
	}
	return out
}
