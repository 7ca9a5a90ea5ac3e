package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// hosts are depotfs processes sharing one depot on a NATS cluster.
type hosts struct {
	cluster *natstest.Cluster
	prefix  string
	all     []*daemon
	race    bool // the daemons are race-built (see daemonConfig.race)
}

var depotSeq atomic.Int64

// startHosts starts a 3-node NATS cluster (nats-server processes with
// JetStream, sync_interval: always) and n depotfs daemons on it, each with
// its own mount and audit log.
func startHosts(t *testing.T, n int) *hosts { return startHostsB(t, n) }

// startHostsB is startHosts for tests and benchmarks.
func startHostsB(t testing.TB, n int) *hosts { return startHostsRace(t, n, false) }

// startHostsRace is startHosts with daemons built with the race detector
// when race is set, for the tests that drive the daemons' concurrency.
func startHostsRace(t testing.TB, n int, race bool) *hosts {
	t.Helper()
	h := &hosts{cluster: natstest.Start(t, 3), prefix: fmt.Sprintf("it%d", depotSeq.Add(1)), race: race}
	for range n {
		h.all = append(h.all, h.start(t))
	}
	return h
}

func (h *hosts) start(t testing.TB) *daemon {
	t.Helper()
	return startDaemon(t, daemonConfig{transport: overHTTP, race: h.race, args: []string{
		"--store", h.cluster.URL(),
		"--nats-prefix", h.prefix,
	}})
}

// waitContent polls p (a path in a mount) until it holds want, and returns
// how long that took. It polls every 100 µs at first, backing off to every
// 2 ms: a read through the mount every 200 µs, in every test that waited
// for another host, kept the daemons and the test busy on a machine of two
// cores, and 2 ms is still finer than the latencies the tests report.
func waitContent(t testing.TB, p string, want []byte, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	pause := 100 * time.Microsecond
	for {
		if got, err := os.ReadFile(p); err == nil && bytes.Equal(got, want) {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			got, err := os.ReadFile(p)
			t.Fatalf("%s: not the expected %d bytes within %v (have %d bytes, %v)", p, len(want), timeout, len(got), err)
		}
		time.Sleep(pause)
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// TestSeveralHostsPushReadBack: a file pushed through host A reads back
// byte-identical, by sha256sum, through the mounts of B and C. The
// daemons are race-built: three hosts pushing, watching and reading one
// depot are the daemon's concurrency end to end.
func TestSeveralHostsPushReadBack(t *testing.T) {
	t.Parallel()
	h := startHostsRace(t, 3, true)
	a, b, c := h.all[0], h.all[1], h.all[2]
	data := pseudoRandom(3<<20+12345, 7) // several chunks
	pushBytes(a, "/shared/big.bin", data, nil)
	small := []byte("hello from A\n")
	pushBytes(a, "/shared/small.txt", small, nil)
	want := sha256hex(data)
	for _, d := range []*daemon{b, c} {
		waitContent(t, d.path("/shared/small.txt"), small, 10*time.Second)
		out := runProgram(t, "sha256sum", d.path("/shared/big.bin"))
		if got := strings.Fields(out)[0]; got != want {
			t.Errorf("sha256sum through %s: %s, pushed %s", d.mount, got, want)
		}
	}
}

// TestSeveralHostsUpdateLatency: 100 updates on A, each visible on B and C
// after A acknowledges it; logs the latency distribution. The distribution
// is a measurement, not a check: on a shared machine under load its p99
// moves by seconds with no fault in depotfs (a 500 ms bound failed at load
// 40-60 on main before and after the change it was run for); what is
// checked is that every update arrives on both hosts.
func TestSeveralHostsUpdateLatency(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 3)
	a, b, c := h.all[0], h.all[1], h.all[2]
	pushBytes(a, "/live/counter.txt", []byte("start\n"), nil)
	waitContent(t, b.path("/live/counter.txt"), []byte("start\n"), 10*time.Second)
	waitContent(t, c.path("/live/counter.txt"), []byte("start\n"), 10*time.Second)
	var lat []time.Duration
	for i := range 100 {
		v := []byte(fmt.Sprintf("update %03d\n", i))
		pushBytes(a, "/live/counter.txt", v, nil)
		acked := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, d := range []*daemon{b, c} {
			wg.Go(func() {
				waitContent(t, d.path("/live/counter.txt"), v, 10*time.Second)
				mu.Lock()
				lat = append(lat, time.Since(acked))
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("visibility on B and C after A acknowledged (%d reads): min %v p50 %v p90 %v p99 %v max %v",
		len(lat), lat[0], pct(0.5), pct(0.9), pct(0.99), lat[len(lat)-1])
}

// TestSeveralHostsNATSNodeKilled: SIGKILL of one NATS server in the middle
// of pushes loses nothing acknowledged, and pushes keep succeeding.
func TestSeveralHostsNATSNodeKilled(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 2)
	a, b := h.all[0], h.all[1]
	t.Cleanup(func() {
		if t.Failed() {
			for _, d := range []*daemon{a, b} {
				for _, l := range strings.Split(d.logs.String(), "\n") {
					if strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN") || strings.Contains(l, "nats") {
						t.Log(d.mount, l)
					}
				}
			}
		}
	})
	var acked []int
	var failed int
	var slowest time.Duration
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			env, err := a.tryCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/crash/f%04d", i), "content": fmt.Sprintf("file %d\n", i)})
			if err != nil || !env.Success {
				if failed++; failed < 5 {
					t.Logf("push %d: %v %+v", i, err, env.Error)
				}
				continue
			}
			acked = append(acked, i)
			slowest = max(slowest, time.Since(start))
		}
	}()
	waitFor(t, 30*time.Second, "some pushes", func() bool { return len(b.ls(t, "/crash")) >= 20 })
	// Kill the leader of the tree bucket's stream: the worst server to
	// lose mid-push.
	leader := h.treeLeader(t)
	h.cluster.Kill(leader)
	killedAt := time.Now()
	before := len(b.ls(t, "/crash"))
	// Pushes go on with two of three servers.
	// Wait for 30 more than B listed at the kill, not for a total: B may
	// lag A by a few files, and counted from a total the pushes after
	// the kill fell short of 30 (27) on a loaded machine.
	waitFor(t, 20*time.Second, "pushes after the kill", func() bool {
		return len(b.ls(t, "/crash")) >= before+30 && time.Since(killedAt) > 3*time.Second
	})
	close(stop)
	<-done
	t.Logf("killed %s (the tree's leader); %d pushes acknowledged, %d failed; slowest acknowledged push %v",
		h.cluster.Nodes[leader].Name, len(acked), failed, slowest)
	if after := len(acked) - before; after < 30 {
		t.Errorf("only %d pushes succeeded after the kill", after)
	}
	for _, i := range acked {
		waitContent(t, b.path(fmt.Sprintf("/crash/f%04d", i)), []byte(fmt.Sprintf("file %d\n", i)), 10*time.Second)
	}
	h.cluster.Restart(leader)
	// After the restart everything still reads on both hosts.
	for _, i := range acked[len(acked)-5:] {
		waitContent(t, a.path(fmt.Sprintf("/crash/f%04d", i)), []byte(fmt.Sprintf("file %d\n", i)), 10*time.Second)
	}
}

// TestSeveralHostsHostKilled: SIGKILL of host C, more pushes on A, restart
// C: C shows everything.
func TestSeveralHostsHostKilled(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 3)
	a, c := h.all[0], h.all[2]
	pushBytes(a, "/before.txt", []byte("before\n"), nil)
	waitContent(t, c.path("/before.txt"), []byte("before\n"), 10*time.Second)
	c.kill()
	for i := range 20 {
		pushBytes(a, fmt.Sprintf("/while/f%02d", i), []byte(fmt.Sprintf("while C was down %d\n", i)), nil)
	}
	a.mustCall("guide_cache_file", map[string]any{"path": "/before.txt", "content": "updated while C was down\n"})
	// A new process on C's database and mount, as after a crash.
	c = startDaemon(t, daemonConfig{transport: overHTTP, db: c.db, mount: c.mount, args: c.cfg.args})
	waitContent(t, c.path("/before.txt"), []byte("updated while C was down\n"), 10*time.Second)
	for i := range 20 {
		waitContent(t, c.path(fmt.Sprintf("/while/f%02d", i)), []byte(fmt.Sprintf("while C was down %d\n", i)), 10*time.Second)
	}
}

// treeLeader returns the index of the node leading the tree bucket's
// stream.
func (h *hosts) treeLeader(t *testing.T) int {
	t.Helper()
	js, err := jetstream.New(h.cluster.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), "KV_"+h.prefix+"-tree")
	if err != nil {
		t.Fatal(err)
	}
	name := st.CachedInfo().Cluster.Leader
	for i, nd := range h.cluster.Nodes {
		if nd.Name == name {
			return i
		}
	}
	t.Fatalf("no node is the tree's leader %q", name)
	return 0
}

// ls lists a directory in d's mount, nothing when it does not exist.
func (d *daemon) ls(t testing.TB, depotDir string) []string {
	t.Helper()
	es, err := os.ReadDir(d.path(depotDir))
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSeveralHostsFetch: programs on C and A block on a listed file whose
// content no host has; the agent connected to B sees one request with
// every waiter, sends the content through B, and every program reads it.
func TestSeveralHostsFetch(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 3)
	a, b, c := h.all[0], h.all[1], h.all[2]
	data := pseudoRandom(70000, 41)
	mtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	listFile(b, "/remote", "data.bin", len(data), mtime)
	for _, d := range []*daemon{a, c} {
		waitFor(t, 10*time.Second, "the placeholder on "+d.mount, func() bool {
			_, err := os.Stat(d.path("/remote/data.bin"))
			return err == nil
		})
	}
	catsC := startCats(t, c.path("/remote/data.bin"), 3)
	catsA := startCats(t, a.path("/remote/data.bin"), 2)
	var reqs []pendingRequest
	waitFor(t, 30*time.Second, "one request with five waiters on B", func() bool {
		var err error
		reqs, _, err = b.pendingRequests(0, "")
		return err == nil && len(reqs) == 1 && reqs[0].Waiters == 5
	})
	if reqs[0].Path != "/remote/data.bin" || reqs[0].Size != float64(len(data)) {
		t.Fatalf("request on B: %+v", reqs[0])
	}
	select {
	case o := <-catsC:
		t.Fatalf("cat on C finished before the content was sent: %v", o.err)
	default:
	}
	pushBytes(b, "/remote/data.bin", data, nil)
	for i := range 5 {
		cats := catsC
		if i >= 3 {
			cats = catsA
		}
		if o := <-cats; o.err != nil || !bytes.Equal(o.out, data) {
			t.Fatalf("cat printed %d bytes (%v), want the %d pushed through B", len(o.out), o.err, len(data))
		}
	}
	waitFor(t, 30*time.Second, "the request gone on B", func() bool {
		reqs, _, err := b.pendingRequests(0, "")
		return err == nil && len(reqs) == 0
	})
}
