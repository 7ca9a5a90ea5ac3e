package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestImportNATSRevisionsAbove: a NATS depot loaded from an export into a
// new prefix (how a lost depot is restored) hands out revisions above
// every revision the exported depot handed out, also those after the
// export: the first write after the import, and the imported files
// themselves, are above the old depot's last revision, and a revision
// number of the old depot finds nothing there (never another version's
// content), nor matches as an if_revision. Before, the new depot counted
// from 1 again.
func TestImportNATSRevisionsAbove(t *testing.T) {
	t.Parallel()
	h := startHostsB(t, 0)
	host := func(prefix string) *daemon {
		return startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", h.cluster.URL(), "--nats-prefix", prefix}})
	}
	old := host(h.prefix)
	revOf := func(env envelope) uint64 { return uint64(env.Data["revision"].(float64)) }
	var oldRevs []uint64
	for i := range 5 {
		oldRevs = append(oldRevs, revOf(pushBytes(old, "/f.txt", []byte(fmt.Sprintf("old %d\n", i)), nil)))
	}
	file := filepath.Join(t.TempDir(), "e.tar")
	exported, _ := exportJSON(t, "--to", file, "--store", h.cluster.URL(), "--nats-prefix", h.prefix)
	// The old depot goes on after its export, then is lost.
	last := revOf(pushBytes(old, "/f.txt", []byte("after the export\n"), nil))
	if last <= exported {
		t.Fatalf("a write after the export has revision %d, the export %d", last, exported)
	}

	prefix := h.prefix + "r"
	code, _, stderr := runDepotfs(t, "import", file, "--store", h.cluster.URL(), "--nats-prefix", prefix)
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Fatalf("import into a new prefix: exit %d, %s", code, stderr)
	}
	restored := host(prefix)
	waitContent(t, restored.path("/f.txt"), []byte("old 4\n"), 10*time.Second)
	next := revOf(pushBytes(restored, "/g.txt", []byte("after the restore\n"), nil))
	if next <= last {
		t.Errorf("the restored depot's first write has revision %d; the old depot had handed out up to %d", next, last)
	}
	for _, r := range append(oldRevs, last) {
		if env := restored.call("guide_restore", map[string]any{"path": "/f.txt", "revision": r}); env.Success {
			t.Errorf("guide_restore of the old depot's revision %d in the restored depot: %s; want nothing there", r, env.Message)
		}
		if env := restored.call("guide_cache_file", map[string]any{"path": "/f.txt", "content": "stale\n", "if_revision": r}); env.Success {
			t.Errorf("a write with if_revision %d, a revision of the old depot, succeeded in the restored depot", r)
		}
	}
	if got, err := os.ReadFile(restored.path("/f.txt")); err != nil || string(got) != "old 4\n" {
		t.Errorf("/f.txt after the refused writes: %q, %v; want the exported content", got, err)
	}
}
