package integration_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// healthz is the status of d's /healthz.
func (d *daemon) healthz(t testing.TB) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(strings.TrimSuffix(d.url, "/mcp") + "/healthz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestSeveralHostsHealthzQuorum: with two of the three NATS servers gone,
// no write can commit, and /healthz on every host says so (503) within
// half the systemd watchdog interval of dist/systemd; it answers 200
// again once the servers are back.
func TestSeveralHostsHealthzQuorum(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 2)
	for _, d := range h.all {
		if code := d.healthz(t); code != http.StatusOK {
			t.Fatalf("%s: /healthz %d while healthy", d.mount, code)
		}
	}
	// Keep the tree's leader: a leader cut off from its peers still
	// answers questions about the stream.
	leader := h.treeLeader(t)
	var down []int
	for i := range h.cluster.Nodes {
		if i != leader {
			h.cluster.Kill(i)
			down = append(down, i)
		}
	}
	killed := time.Now()
	for _, d := range h.all {
		waitFor(t, 15*time.Second, "/healthz 503 on "+d.mount, func() bool { return d.healthz(t) == http.StatusServiceUnavailable })
	}
	t.Logf("/healthz failed on every host %v after two of three servers were killed", time.Since(killed).Round(time.Millisecond))
	for _, i := range down {
		h.cluster.Restart(i)
	}
	for _, d := range h.all {
		waitFor(t, 30*time.Second, "/healthz 200 on "+d.mount, func() bool { return d.healthz(t) == http.StatusOK })
	}
}

// TestSeveralHostsServeWaitsForCluster: serve started while no NATS
// server runs waits for the cluster (saying so in its log), and serves
// once the servers, started 3 s later, have elected their leaders.
func TestSeveralHostsServeWaitsForCluster(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	for i := range c.Nodes {
		c.Kill(i)
	}
	started := make(chan error, 1)
	go func() {
		time.Sleep(3 * time.Second) // the servers come up after depotfs, as at boot
		var err error
		for i := range c.Nodes {
			err = errors.Join(err, c.StartNode(i))
		}
		started <- err
	}()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", c.URL(), "--nats-prefix", "waits"}})
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.logs.String(), "waiting for the NATS cluster") {
		t.Errorf("serve did not log what it waited for:\n%s", d.logs)
	}
	pushBytes(d, "/after-the-wait.txt", []byte("written\n"), nil)
	waitContent(t, d.path("/after-the-wait.txt"), []byte("written\n"), 10*time.Second)
}
