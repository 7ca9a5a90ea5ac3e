package integration_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"testing"
	"time"
)

// TestSnapshotGoneAtOnce: a snapshot deleted with `depotfs snapshot
// delete` is gone from the mount when the command returns, although the
// kernel had just looked up every name of it (ls, stat and cat of a file
// right before the delete): ls of /.snapshots does not list it and stat
// and cat of its paths fail with ENOENT. A snapshot with a TTL is gone
// from the mount at the instant it expires, however often it was read
// just before.
func TestSnapshotGoneAtOnce(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/sub/a.txt", "content": "first"})
	paths := []string{"", "/sub", "/sub/a.txt"}
	// seen reads name's tree through the mount, so the kernel holds every
	// entry of it.
	seen := func(name string) {
		t.Helper()
		if !slices.Contains(dirNames(t, d.path("/.snapshots")), name) {
			t.Fatalf("ls /.snapshots does not list %s", name)
		}
		for _, p := range paths {
			if _, err := os.Stat(d.path("/.snapshots/" + name + p)); err != nil {
				t.Fatalf("before the delete: %v", err)
			}
		}
		if got, err := os.ReadFile(d.path("/.snapshots/" + name + "/sub/a.txt")); err != nil || string(got) != "first" {
			t.Fatalf("before the delete, cat reads %q (%v)", got, err)
		}
	}
	// gone fails unless name's tree is gone from the mount.
	gone := func(name, after string) {
		t.Helper()
		if slices.Contains(dirNames(t, d.path("/.snapshots")), name) {
			t.Errorf("%s: ls /.snapshots still lists %s", after, name)
		}
		for _, p := range paths {
			if _, err := os.Stat(d.path("/.snapshots/" + name + p)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: stat %s%s: %v, want ENOENT", after, name, p, err)
			}
		}
		if got, err := os.ReadFile(d.path("/.snapshots/" + name + "/sub/a.txt")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: cat %s/sub/a.txt reads %q (%v), want ENOENT", after, name, got, err)
		}
	}

	for round := range 3 {
		name := fmt.Sprintf("s%d", round)
		if code, out, errOut := runDepotfs(t, "snapshot", "create", name, "--url", d.url, "--path", "/proj"); code != 0 {
			t.Fatalf("snapshot create: exit %d\n%s%s", code, out, errOut)
		}
		seen(name)
		if code, out, errOut := runDepotfs(t, "snapshot", "delete", name, "--url", d.url); code != 0 {
			t.Fatalf("snapshot delete: exit %d\n%s%s", code, out, errOut)
		}
		gone(name, "right after delete returned")
	}

	// Expiry: read the snapshot in a loop until after it expires; no read
	// that starts at or after the expiry may succeed.
	code, out, errOut := runDepotfs(t, "snapshot", "create", "brief", "--url", d.url, "--path", "/proj", "--ttl", "2s", "--json")
	if code != 0 {
		t.Fatalf("snapshot create --ttl: exit %d\n%s%s", code, out, errOut)
	}
	var reply struct {
		Snapshots []struct {
			Expires time.Time `json:"expires"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil || len(reply.Snapshots) != 1 || reply.Snapshots[0].Expires.IsZero() {
		t.Fatalf("snapshot create --json: %v\n%s", err, out)
	}
	expires := reply.Snapshots[0].Expires
	reads, late := 0, 0
	for time.Now().Before(expires.Add(500 * time.Millisecond)) {
		start := time.Now()
		_, err := os.ReadFile(d.path("/.snapshots/brief/sub/a.txt"))
		switch {
		case err == nil && !start.Before(expires):
			late++
			if late == 1 {
				t.Errorf("cat succeeded %v after the snapshot expired", start.Sub(expires))
			}
		case err == nil:
			reads++
		case !errors.Is(err, fs.ErrNotExist) || start.Before(expires.Add(-time.Second)):
			t.Fatalf("cat %v before the expiry: %v", expires.Sub(start), err)
		}
	}
	if reads == 0 {
		t.Error("the snapshot was never read before it expired: the test proves nothing")
	}
	if late > 0 {
		t.Errorf("%d reads succeeded after the expiry", late)
	}
	gone("brief", "after the expiry")
}
