package integration_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// crashWriters is how many clients of TestCrashRecovery write at once, so
// that their writes share the store's transactions (group commit).
const crashWriters = 16

// TestCrashRecovery pushes files from crashWriters concurrent writers,
// kills the daemon with SIGKILL mid-stream, and starts it again on the same
// database and mount: every acknowledged file reads back with the right
// hash, nothing partial is visible, and the stale mount left by the killed
// process is recovered.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	// Mostly small files, so that many writes are in flight at once and
	// share commits; every 16th is up to 300 KB, so that the kill also
	// lands in the middle of larger bodies.
	content := func(i int) []byte {
		if i%16 == 15 {
			return pseudoRandom(4096+i*7919%300000, uint64(i))
		}
		return pseudoRandom(64+i*7919%4096, uint64(i))
	}

	var (
		mu    sync.Mutex
		acked = map[string][]byte{}
		tried = map[string][]byte{}
	)
	stop := make(chan struct{})
	var writers sync.WaitGroup
	// The writers keep their own reference to the client: kill closes the
	// client and clears d.client while a writer may be mid-call.
	client := d.client
	for g := range crashWriters {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := g; ; i += crashWriters {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/crash/f-%05d.bin", i)
				c := content(i)
				mu.Lock()
				tried[p] = c
				mu.Unlock()
				env, err := callWith(client, "guide_cache_file", map[string]any{
					"path": p, "content": base64.StdEncoding.EncodeToString(c), "encoding": "base64",
				})
				if err != nil || !env.Success {
					return // the daemon is gone
				}
				mu.Lock()
				acked[p] = c
				mu.Unlock()
			}
		}()
	}
	// A chunked upload that never completes must not become visible.
	d.mustCall("guide_read_file", map[string]any{
		"path": "/crash/partial.bin", "upload_id": "never-done", "chunk_index": 0, "chunk_count": 3,
		"content": base64.StdEncoding.EncodeToString([]byte("part one")), "encoding": "base64",
		"sha256": strings.Repeat("0", 64),
	})
	waitFor(t, 60*time.Second, "200 acknowledged writes", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	d.kill()
	close(stop)
	writers.Wait()

	if _, err := os.Stat(d.mount); err == nil {
		t.Logf("mount point still answers stat after SIGKILL")
	} else {
		t.Logf("stale mount after SIGKILL: %v", err)
	}
	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount})

	mu.Lock()
	defer mu.Unlock()
	for p, c := range acked {
		got, err := os.ReadFile(d2.path(p))
		if err != nil || sha256hex(got) != sha256hex(c) {
			t.Errorf("acknowledged %s: read %d bytes, %v; want %d bytes with sha256 %s", p, len(got), err, len(c), sha256hex(c))
		}
	}
	entries, err := os.ReadDir(d2.path("/crash"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := "/crash/" + e.Name()
		want, ok := tried[p]
		if !ok {
			t.Errorf("%s is visible but was never sent", p)
			continue
		}
		got, err := os.ReadFile(filepath.Join(d2.mount, "crash", e.Name()))
		if err != nil || sha256hex(got) != sha256hex(want) {
			t.Errorf("%s is visible but partial or wrong: %d bytes, %v", p, len(got), err)
		}
	}
	t.Logf("%d writes acknowledged before SIGKILL, %d visible after restart", len(acked), len(entries))

	// Every acknowledged write has its record, written while its change
	// committed and never amended as failed; the restart took the log
	// (a record past the checkpoint is named in a recovery record), and
	// it verifies.
	recs := auditRecords(t, d2.auditLog())
	recorded, amended := map[string]uint64{}, map[uint64]bool{}
	for _, r := range recs {
		if r.Amends != 0 {
			amended[r.Amends] = true
		}
		if r.Tool == "guide_cache_file" && r.Decision == audit.Allow && r.Error == "" && len(r.Paths) > 0 {
			recorded[r.Paths[0]] = r.Seq
		}
	}
	for p := range acked {
		seq, ok := recorded[p]
		switch {
		case !ok:
			t.Errorf("acknowledged %s has no audit record", p)
		case amended[seq]:
			t.Errorf("acknowledged %s: its record %d is amended as failed", p, seq)
		}
	}
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", d2.auditLog()); code != 0 {
		t.Errorf("audit verify after SIGKILL: exit %d\n%s%s", code, out, errOut)
	}
}
