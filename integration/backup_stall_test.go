package integration_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// stallOverwrites is how many times the stall test overwrites one 1 MiB
// file while a backup reader holds its response unread: 120 in a soak
// (the figure in docs/backup.md), 40 by default, which is enough to see a
// held read transaction (it grows the file by about 1 MiB an overwrite).
var stallOverwrites = bySoak(40, 120)

// TestBackupStalledReader: a client that asks for a backup and stops
// reading it does not grow the database: the file after 120 overwrites
// of a 1 MiB file (40 outside a soak) is within 10% (plus 16 MiB of allocation noise) of the
// file after the same writes with no backup reader; the server cuts the
// stalled response after --http-body-idle-timeout and logs why.
func TestBackupStalledReader(t *testing.T) {
	t.Parallel()
	run := func(stall bool) int64 {
		d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0", "--http-body-idle-timeout", "3s"}})
		for i := range 4 {
			data := pseudoRandom(8<<20, uint64(300+i))
			u := beginUpload(t, d, map[string]any{"path": fmt.Sprintf("/seed/%d.bin", i), "size": len(data)})
			if r := put(t, u, bytes.NewReader(data), int64(len(data)), ""); r.Status != 200 {
				t.Fatalf("seed: %d %+v", r.Status, r.Env.Error)
			}
		}
		var body io.ReadCloser
		if stall {
			resp, err := http.Get(strings.TrimSuffix(d.url, "/mcp") + "/backup")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 {
				t.Fatalf("GET /backup: %s", resp.Status)
			}
			body = resp.Body
			defer body.Close()
		}
		for i := range stallOverwrites {
			data := pseudoRandom(1<<20, uint64(1000+i))
			u := beginUpload(t, d, map[string]any{"path": "/hot.bin", "size": len(data)})
			if r := put(t, u, bytes.NewReader(data), int64(len(data)), ""); r.Status != 200 {
				t.Fatalf("overwrite %d: %d %+v", i, r.Status, r.Env.Error)
			}
		}
		fi, err := os.Stat(d.db)
		if err != nil {
			t.Fatal(err)
		}
		if stall {
			d.waitLogLine("the stalled backup cut", "tool=backup", "stopped reading")
			if _, err := io.Copy(io.Discard, body); err == nil {
				t.Errorf("the stalled backup's body ended cleanly; want it cut")
			}
		}
		return fi.Size()
	}
	base := run(false)
	stalled := run(true)
	t.Logf("database after %d overwrites of 1 MiB: %.1f MiB with a stalled backup reader, %.1f MiB without (%.2fx)",
		stallOverwrites, float64(stalled)/(1<<20), float64(base)/(1<<20), float64(stalled)/float64(base))
	// The bound allows 10% and 16 MiB: the two depots grow by whole bbolt
	// allocation steps and by how their commits happened to group under
	// the suite's load (a run beside the whole suite gave 63.1 against
	// 50.1 MiB), while a reader pinning its transaction grows the file by
	// about the size of every overwrite it outlives (35 -> 774 MiB over 120).
	if float64(stalled) > 1.10*float64(base)+16<<20 {
		t.Errorf("a stalled backup reader grew the database to %d bytes, against %d without one", stalled, base)
	}
}
