package nats_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest/pastcheck"
)

// openPast opens one more host of the depot prefix in c, keeping keep
// versions, on clk.
func openPast(t *testing.T, c *natstest.Cluster, prefix string, keep int, clk *pastcheck.Clock, base nats.Options) (*nats.Store, error) {
	base.Prefix, base.Now, base.KeepVersions = prefix, clk.Now, keep
	if isShared(c) && base.Timeout == 0 {
		base.Timeout = sharedTimeout
	}
	dropAtCleanup(t, c, prefix)
	s, err := nats.Open(t.Context(), c.Connect(t), &base)
	if err == nil {
		t.Cleanup(func() { s.Close() })
	}
	return s, err
}

// pastConfig is a pastcheck run on a new depot in c: a writing host, two
// hosts that only read, and restarts of the writing host.
func pastConfig(t *testing.T, c *natstest.Cluster, keep int, base nats.Options) (store.Store, pastcheck.Config) {
	t.Helper()
	clk := pastcheck.NewClock()
	prefix := fmt.Sprintf("p%d", depots.Add(1))
	var hosts []store.Store
	for i := range 3 {
		o := base
		if i > 0 {
			// A view cache is the writing host's own.
			o.ViewCache = ""
		}
		s, err := openPast(t, c, prefix, keep, clk, o)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, s)
	}
	s := hosts[0]
	reopen := func(ctx context.Context, keep int) (store.Store, error) {
		s.Close()
		next, err := openPast(t, c, prefix, keep, clk, base)
		if err != nil {
			return nil, err
		}
		s = next
		return next, nil
	}
	return s, pastcheck.Config{Seed: pastcheck.Seed(), KeepVersions: keep, Clock: clk, Readers: hosts[1:], Reopen: reopen}
}

// TestPastAgainstModel runs the model-based checker of the past
// (pastcheck) on depots keeping 0 and 3 versions in a 3-node cluster
// without faults, at once: 200 operations each, 3,000 under DEPOTFS_SOAK=1.
func TestPastAgainstModel(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ops := 200
	if soak {
		ops = 3000
	}
	for _, keep := range []int{0, 3} {
		t.Run(fmt.Sprintf("Keep%d", keep), func(t *testing.T) {
			t.Parallel()
			s, cfg := pastConfig(t, c, keep, nats.Options{})
			cfg.Ops = ops
			pastcheck.Check(t, t.Context(), s, cfg)
		})
	}
}

// TestPastUnderFaults runs pastcheck on one host of a 3-node cluster
// while a nemesis kills servers, pauses them (SIGSTOP) for longer than an
// election, and takes two of three away (quorum lost) for longer than the
// host's write timeout. Writes that fail then have an unknown outcome,
// which the checker settles after the cluster commits again; every read
// is compared with the model, none skipped. By default a pause of 9.5 s
// and a quorum loss of 3 s; under DEPOTFS_SOAK=1, 5 minutes of random
// faults (pauses of 9.5–13 s, kills of 2–6 s, quorum losses of 3–12 s).
func TestPastUnderFaults(t *testing.T) {
	t.Parallel()
	var dur time.Duration // by default, the two first faults alone
	if soak {
		dur = 5 * time.Minute
	}
	c := natstest.Start(t, 3)
	const writeTimeout = 2 * time.Second
	s, cfg := pastConfig(t, c, 2, nats.Options{WriteTimeout: writeTimeout})
	stop := make(chan struct{})
	done := make(chan pastcheck.Report, 1)
	cfg.Ops, cfg.Stop, cfg.Faults = 1<<30, stop, true
	go func() { done <- pastcheck.Check(t, t.Context(), s, cfg) }()

	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	var faults []string
	end := time.Now().Add(dur)
	// How long each kind of fault holds: a pause outlasts the raft
	// layer's longest election timeout (9 s), so the others elect a new
	// leader meanwhile; a quorum loss outlasts the write timeout, and in
	// the soak run sometimes the 10 s after which a leader without quorum
	// steps down.
	const election = 9 * time.Second
	between := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo))) }
	for n := 0; time.Now().Before(end) || n < 2; n++ {
		time.Sleep(between(500*time.Millisecond, 2*time.Second))
		i := rng.IntN(3)
		j := (i + 1) % 3
		pause, kill, quorum := between(election+500*time.Millisecond, election+4*time.Second), between(2*time.Second, 6*time.Second), between(writeTimeout+time.Second, 12*time.Second)
		// The first two faults are a pause and a quorum loss, so that the
		// short run has both, and holds no longer than it must.
		kind := rng.IntN(4)
		if n < 2 {
			kind = []int{1, 2 + rng.IntN(2)}[n]
		}
		if !soak {
			pause, quorum = election+500*time.Millisecond, writeTimeout+time.Second
		}
		switch kind {
		case 0:
			c.Kill(i)
			time.Sleep(kill)
			c.Restart(i)
			faults = append(faults, fmt.Sprintf("kill n%d %v", i+1, kill))
		case 1:
			c.Pause(i)
			time.Sleep(pause)
			c.Resume(i)
			faults = append(faults, fmt.Sprintf("pause n%d %v", i+1, pause))
		case 2:
			c.Kill(i)
			c.Kill(j)
			time.Sleep(quorum)
			c.Restart(i)
			c.Restart(j)
			faults = append(faults, fmt.Sprintf("quorum loss: kill n%d+n%d %v", i+1, j+1, quorum))
		case 3:
			c.Pause(i)
			c.Pause(j)
			time.Sleep(quorum)
			c.Resume(i)
			c.Resume(j)
			faults = append(faults, fmt.Sprintf("quorum loss: pause n%d+n%d %v", i+1, j+1, quorum))
		}
	}
	close(stop)
	rep := <-done
	t.Logf("%d faults: %s", len(faults), strings.Join(faults, ", "))
	if rep.Unknown == 0 && !t.Failed() {
		t.Log("no write had an unknown outcome in this run")
	}
}
