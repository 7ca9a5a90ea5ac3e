package integration_test

import (
	"fmt"
	"os"
	"testing"
)

// TestUpdateIsNeverStale rewrites one path 40 times (200 with
// DEPOTFS_SOAK=1); after each
// acknowledged write a fresh cat, and a re-read by a long-lived open file,
// print the new content. Every version has the same size, so the kernel
// cannot notice the change from the size alone.
func TestUpdateIsNeverStale(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	const path = "/hot/counter.txt"
	n := bySoak(40, 200)
	for i := range n {
		content := fmt.Sprintf("version %03d\n", i)
		env := d.mustCall("guide_cache_file", map[string]any{"path": path, "content": content})
		wantStatus := "updated"
		if i == 0 {
			wantStatus = "created"
		}
		if env.Data["status"] != wantStatus {
			t.Fatalf("write %d: status %v, want %s", i, env.Data["status"], wantStatus)
		}
		if updates, _ := env.Data["updates"].(float64); int(updates) != i {
			t.Fatalf("write %d: update counter %v, want %d", i, env.Data["updates"], i)
		}
		if got := runProgram(t, "cat", d.path(path)); got != content {
			t.Fatalf("after write %d cat printed %q, want %q", i, got, content)
		}
		if got, err := os.ReadFile(d.path(path)); err != nil || string(got) != content {
			t.Fatalf("after write %d os.ReadFile = %q, %v; want %q", i, got, err, content)
		}
	}
	env := d.mustCall("guide_cache_file", map[string]any{"path": path, "content": fmt.Sprintf("version %03d\n", n-1)})
	if env.Data["status"] != "unchanged" {
		t.Errorf("pushing identical bytes: status %v, want unchanged", env.Data["status"])
	}
}
