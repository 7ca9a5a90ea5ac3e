package integration_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// startSlowAgent answers pending requests as startAgent does, each reply
// about a second after the requests were listed, as an agent that has to
// fetch a file does.
func startSlowAgent(t *testing.T, d *daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		cursor := ""
		for ctx.Err() == nil {
			reqs, next, err := d.pendingRequests(2, cursor)
			if err != nil {
				if ctx.Err() == nil {
					t.Error(err)
				}
				return
			}
			cursor = next
			if len(reqs) == 0 {
				continue
			}
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
			var files []map[string]any
			for _, r := range reqs {
				files = append(files, map[string]any{"path": r.Path, "content": placeholderContent(r.Path)})
			}
			if _, err := d.tryCall("guide_cache_files", map[string]any{"files": files}); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// TestCopyDeclaredTree: cp -a, cp -r and install of a declared tree (15
// placeholders in 3 directories, each program its own tree) copy every
// file in one run, exit 0, byte for byte, while an agent answers each
// request about a second later. cp compares the inode it looked up with
// the one its open returns and skips a file "replaced while being
// copied": the arriving content must keep the placeholder's inode.
func TestCopyDeclaredTree(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	startSlowAgent(t, d)
	for _, tc := range []struct {
		name string
		copy func(src, dst string) *exec.Cmd
	}{
		{"cp -a", func(src, dst string) *exec.Cmd { return exec.Command("cp", "-a", src, dst) }},
		{"cp -r", func(src, dst string) *exec.Cmd { return exec.Command("cp", "-r", src, dst) }},
		{"install", func(src, dst string) *exec.Cmd {
			return exec.Command("sh", "-c", `cd "$1" && find . -type f | sort | while read -r f; do install -D -m 644 "$f" "$2/$f" || exit 1; done`, "sh", src, dst)
		}},
	} {
		root := "/decl-" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", ""), "-", "")
		paths := declareTree(d, root, 3, 5)
		dst := filepath.Join(t.TempDir(), "copy")
		start := time.Now()
		out, err := tc.copy(d.path(root), dst).CombinedOutput()
		t.Logf("%s of %d placeholders: %v", tc.name, len(paths), time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
		}
		copied := 0
		for _, p := range paths {
			got, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(strings.TrimPrefix(p, root+"/"))))
			if err == nil && string(got) == placeholderContent(p) {
				copied++
			} else {
				t.Errorf("%s: %s copied as %q (%v), want %q", tc.name, p, got, err, placeholderContent(p))
			}
		}
		if copied != len(paths) {
			t.Errorf("%s: %d of %d files copied", tc.name, copied, len(paths))
		}
	}
}
