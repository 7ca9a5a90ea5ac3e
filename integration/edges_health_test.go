package integration_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHealthzWritesNothing: probing /healthz ten times a second for four
// seconds on an idle server leaves the database file as it was (mtime
// and size): a probe reads, it does not commit. A store that cannot
// commit is still reported: a full disk makes /healthz 503 "disk full"
// (naming no path), and freeing it makes it healthy again.
func TestHealthzWritesNothing(t *testing.T) {
	t.Parallel()
	dir := smallFS(t, 48<<20)
	d := startDaemon(t, daemonConfig{transport: overHTTP, db: filepath.Join(dir, "depot.db"), args: []string{"--disk-reserve", "1MiB"}})
	base := strings.TrimSuffix(d.url, "/mcp")
	d.mustCall("guide_cache_file", map[string]any{"path": "/w/a.txt", "content": "a"})

	before, err := os.Stat(d.db)
	if err != nil {
		t.Fatal(err)
	}
	probes := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); <-tick.C {
		if code, body := get(t, base+"/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz on an idle server: %d %q", code, body)
		}
		probes++
	}
	after, err := os.Stat(d.db)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d probes of /healthz in 4 s: db mtime %v -> %v, size %d -> %d", probes, before.ModTime(), after.ModTime(), before.Size(), after.Size())
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("%d probes of /healthz changed the database file: mtime %v -> %v, size %d -> %d; want it untouched",
			probes, before.ModTime(), after.ModTime(), before.Size(), after.Size())
	}

	filler := fill(t, dir)
	var code int
	var body string
	waitFor(t, 10*time.Second, "/healthz to report the full disk", func() bool {
		code, body = get(t, base+"/healthz")
		return code == http.StatusServiceUnavailable
	})
	if body != "unhealthy: store: disk full\n" {
		t.Errorf("/healthz on a full disk: %d %q; want 503 \"unhealthy: store: disk full\"", code, body)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "/healthz to recover once the disk has room", func() bool {
		code, body = get(t, base+"/healthz")
		return code == http.StatusOK
	})
}
