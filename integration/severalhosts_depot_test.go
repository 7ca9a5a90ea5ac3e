package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestSeveralHostsOtherCluster: a host that served a depot and is then
// started against another JetStream cluster (its --store address now
// answered by other servers) refuses to start, saying why, and creates
// nothing there; --nats-create makes a new, empty depot there, and the
// host, now recorded as serving that one, refuses the first cluster's
// depot. A host with no record joins the depot a cluster holds.
func TestSeveralHostsOtherCluster(t *testing.T) {
	t.Parallel()
	first, other := natstest.Start(t, 3), natstest.Start(t, 3)
	dir := t.TempDir()
	db := filepath.Join(dir, "depot.db")
	args := func(c *natstest.Cluster, extra ...string) []string {
		return append([]string{"--store", c.URL(), "--nats-prefix", "mine", "--nats-wait", "3s"}, extra...)
	}
	d := startDaemon(t, daemonConfig{transport: overHTTP, db: db, mount: filepath.Join(dir, "mnt"), args: args(first)})
	pushBytes(d, "/kept.txt", []byte("kept\n"), nil)
	d.stop()
	record, err := os.ReadFile(db + ".nats-mine.json")
	if err != nil {
		t.Fatalf("the host kept no record of its depot: %v", err)
	}
	var rec struct{ Depot string }
	if err := json.Unmarshal(record, &rec); err != nil || rec.Depot == "" {
		t.Fatalf("the host's record %s: %v", record, err)
	}

	refused := func(c *natstest.Cluster, want ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, depotfsBin, append([]string{"serve", "--db", db, "--mount", filepath.Join(dir, "mnt"), "--listen", "127.0.0.1:0"}, args(c)...)...)
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("serve started on a cluster without the depot it served:\n%s", out)
		}
		for _, w := range want {
			if !strings.Contains(string(out), w) {
				t.Errorf("serve's refusal does not say %q:\n%s", w, out)
			}
		}
	}
	refused(other, "the cluster holds no depot", rec.Depot, "--nats-create")
	js, err := jetstream.New(other.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(t.Context()).Name() {
		t.Errorf("the refused host created stream %s on the other cluster", name)
	}

	d = startDaemon(t, daemonConfig{transport: overHTTP, db: db, mount: filepath.Join(dir, "mnt"), args: args(other, "--nats-create")})
	if _, err := os.Stat(d.path("/kept.txt")); err == nil {
		t.Error("the new depot shows the first one's file")
	}
	pushBytes(d, "/new.txt", []byte("new\n"), nil)
	d.stop()
	refused(first, "the cluster holds another depot", rec.Depot, db+".nats-mine.json")

	// A host that never served a depot joins the one the cluster holds.
	joined := startDaemon(t, daemonConfig{transport: overHTTP, args: args(first)})
	waitContent(t, joined.path("/kept.txt"), []byte("kept\n"), 10*time.Second)
}

// TestExportCreatesNoDepot: export from a NATS cluster that holds no depot
// under the prefix (a mistyped prefix or address) fails, saying so, and
// leaves the cluster as it was: a read-only command never creates the
// empty depot it would then have exported.
func TestExportCreatesNoDepot(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	code, out, errOut := runDepotfs(t, "export", "--store", c.URL(), "--nats-prefix", "typo", "--nats-wait", "1s", "--to", filepath.Join(t.TempDir(), "x.tar"))
	if code == 0 || !strings.Contains(errOut, "the cluster holds no depot") {
		t.Errorf("export from a cluster without the depot: exit %d, want a refusal naming the missing depot\n%s%s", code, out, errOut)
	}
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for name := range js.StreamNames(t.Context()).Name() {
		t.Errorf("export created stream %s", name)
	}
}
