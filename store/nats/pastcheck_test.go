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
	for range 3 {
		s, err := openPast(t, c, prefix, keep, clk, base)
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
// without faults: 300 operations each, 3,000 under DEPOTFS_SOAK=1.
func TestPastAgainstModel(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	ops := 300
	if soak {
		ops = 3000
	}
	for _, keep := range []int{0, 3} {
		t.Run(fmt.Sprintf("Keep%d", keep), func(t *testing.T) {
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
// is compared with the model, none skipped. 12 s of faults by default,
// 5 minutes under DEPOTFS_SOAK=1.
func TestPastUnderFaults(t *testing.T) {
	t.Parallel()
	dur := 12 * time.Second
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
	// An election takes a few seconds (the raft layer's election timeout);
	// faults hold longer than that, and longer than the write timeout.
	hold := func() time.Duration { return writeTimeout + time.Duration(2000+rng.IntN(3000))*time.Millisecond }
	for time.Now().Before(end) {
		time.Sleep(time.Duration(500+rng.IntN(1500)) * time.Millisecond)
		i, d := rng.IntN(3), hold()
		j := (i + 1) % 3
		// The first two faults are a pause and a quorum loss, so that a
		// short run has both.
		kind := rng.IntN(4)
		if n := len(faults); n < 2 {
			kind = []int{1, 2}[n]
		}
		switch kind {
		case 0:
			c.Kill(i)
			time.Sleep(d)
			c.Restart(i)
			faults = append(faults, fmt.Sprintf("kill n%d %v", i+1, d))
		case 1:
			c.Pause(i)
			time.Sleep(d)
			c.Resume(i)
			faults = append(faults, fmt.Sprintf("pause n%d %v", i+1, d))
		case 2:
			c.Kill(i)
			c.Kill(j)
			time.Sleep(d)
			c.Restart(i)
			c.Restart(j)
			faults = append(faults, fmt.Sprintf("quorum loss: kill n%d+n%d %v", i+1, j+1, d))
		case 3:
			c.Pause(i)
			c.Pause(j)
			time.Sleep(d)
			c.Resume(i)
			c.Resume(j)
			faults = append(faults, fmt.Sprintf("quorum loss: pause n%d+n%d %v", i+1, j+1, d))
		}
	}
	close(stop)
	rep := <-done
	t.Logf("%d faults: %s", len(faults), strings.Join(faults, ", "))
	if rep.Unknown == 0 && !t.Failed() {
		t.Log("no write had an unknown outcome in this run")
	}
}
