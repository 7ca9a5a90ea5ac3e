package integration_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBulkPushDefaults checks the bulk-push defaults: a daemon started with only a
// small --max-store-size starts (the default --max-file-size follows it),
// and a loopback client without credentials pushing 600 small files, 8 at
// a time, is never rate limited.
func TestBulkPushDefaults(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "3584KiB"}})
	stats := d.mustCall("guide_cache_stats", map[string]any{})
	limits, _ := stats.Data["limits"].(map[string]any)
	if got := limits["max_file_bytes"]; got != float64(3584<<10) {
		t.Errorf("max_file_bytes = %v, want %d (the store limit)", got, 3584<<10)
	}
	const files, inFlight = 600, 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, files)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= files; i = next.Add(1) {
				env, err := d.tryCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/bulk/f%04d.txt", i), "content": fmt.Sprintf("file %d\n", i)})
				switch {
				case err != nil:
					errs <- err
				case !env.Success:
					errs <- fmt.Errorf("file %d: %+v", i, env.Error)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCacheFilesBatch stores 500 files with one guide_cache_files call and
// reads every one back through the mount with sha256sum; then a batch
// with one bad entry is refused and changes nothing in the mount.
func TestCacheFilesBatch(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	const n = 500
	var files []any
	want := map[string]string{} // host path -> sha256
	for i := range n {
		data := pseudoRandom(1+i*37%4000, uint64(i))
		p := fmt.Sprintf("/batch/d%02d/f%03d.bin", i%20, i)
		files = append(files, map[string]any{"path": p, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64", "sha256": sha256hex(data)})
		want[d.path(p)] = sha256hex(data)
	}
	env := d.mustCall("guide_cache_files", map[string]any{"files": files})
	if totals, _ := env.Data["totals"].(map[string]any); totals["created"] != float64(n) {
		t.Fatalf("totals %v, want %d created", env.Data["totals"], n)
	}
	paths := make([]string, 0, n)
	for p := range want {
		paths = append(paths, p)
	}
	out, err := exec.Command("sha256sum", paths...).Output()
	if err != nil {
		t.Fatalf("sha256sum through the mount: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != n {
		t.Fatalf("sha256sum printed %d lines, want %d", len(lines), n)
	}
	for _, line := range lines {
		sum, p, _ := strings.Cut(line, "  ")
		if want[p] != sum {
			t.Errorf("%s: sha256sum %s, want %s", p, sum, want[p])
		}
	}

	before := snapshot(t, d.mount)
	bad := []any{
		map[string]any{"path": "/batch2/a.txt", "content": "a"},
		map[string]any{"path": "/batch/d00/f000.bin/below", "content": "under a file"},
		map[string]any{"path": "/batch2/c.txt", "content": "c"},
	}
	env = d.call("guide_cache_files", map[string]any{"files": bad})
	if env.Success || env.Error.Type != "conflict" || !strings.Contains(env.Error.Message, "files[1]") {
		t.Fatalf("batch with a bad entry: %+v, want a conflict naming files[1]", env.Error)
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("a refused batch changed the mount:\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(d.mount, "batch2")); err == nil {
		t.Errorf("a refused batch created /batch2")
	}
}
