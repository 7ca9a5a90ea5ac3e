package nats_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCloseToOpenThroughFaults: four writers on host A write two paths
// while the tree stream's leader is paused longer than an election and
// resumed, killed and started again, and the cluster loses its quorum and
// gets it back; right after each acknowledgement the path is opened on
// three more hosts, each connected first to another server, so one of
// them lags whenever its server was hit. An open may fail with
// store.ErrUnavailable, never read a value older than the acknowledged
// one. Before the view counted the messages it skipped (see
// TestCloseToOpenAfterSkippedMessages), 3 of 7,062 opens in one run
// failed with "content is missing": the entry was applied, its content
// record skipped. It takes about 45 s, so it runs with
// DEPOTFS_SOAK=1 only; the faults run by default in the Jepsen-style test
// of integration/severalhosts_jepsen_test.go.
func TestCloseToOpenThroughFaults(t *testing.T) {
	if !soak {
		t.Skip("about 45 s of faults; run with DEPOTFS_SOAK=1")
	}
	t.Parallel()
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("cf%d", depots.Add(1))
	a := openPrefix(t, c, storetest.Config{}, prefix)
	var readers []store.Store
	for i := range c.Nodes {
		urls := []string{c.Nodes[i].URL()}
		for j := range c.Nodes {
			if j != i {
				urls = append(urls, c.Nodes[j].URL())
			}
		}
		nc, err := natsgo.Connect(strings.Join(urls, ","), natsgo.DontRandomize(), natsgo.MaxReconnects(-1), natsgo.ReconnectWait(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		r, err := nats.Open(t.Context(), nc, &nats.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		readers = append(readers, r)
	}
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	var stale, failed, opens, acked atomic.Int64
	var mu sync.Mutex
	revOf := map[string]uint64{} // each acknowledged value's revision
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/cf/r%d", i%2)
				data := fmt.Sprintf("write %d of worker %d\n", i, w)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := a.Put(ctx, store.PutRequest{Path: p, Data: []byte(data)})
				cancel()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				acked.Add(1)
				mu.Lock()
				revOf[data] = res.Entry.Revision
				mu.Unlock()
				for k, reader := range readers {
					got, err := readOnce(reader, p)
					opens.Add(1)
					mu.Lock()
					rev, known := revOf[string(got)]
					mu.Unlock()
					switch {
					case errors.Is(err, store.ErrUnavailable):
						failed.Add(1)
					case err != nil || (known && rev < res.Entry.Revision):
						stale.Add(1)
						t.Errorf("%s open of %s on reader %d after acknowledgement at %d: %q (revision %d) %v", time.Now().UTC().Format("15:04:05.000"), p, k, res.Entry.Revision, got, rev, err)
					}
				}
			}
		})
	}
	waitAcks := func(n int64) {
		t.Helper()
		from := acked.Load()
		waitUntil(t, 60*time.Second, "writes", func() bool { return acked.Load() >= from+n })
	}
	leader := func() int {
		t.Helper()
		var l int
		waitUntil(t, 60*time.Second, "a leader", func() bool { l = leaderOf(t, c, js, treeStream(prefix)); return l >= 0 })
		return l
	}
	waitAcks(20)
	l := leader()
	t.Logf("%s pause %d", time.Now().UTC().Format("15:04:05.000"), l)
	c.Pause(l)
	time.Sleep(11 * time.Second)
	c.Resume(l)
	t.Logf("%s resumed %d", time.Now().UTC().Format("15:04:05.000"), l)
	time.Sleep(5 * time.Second)
	waitAcks(20)
	l = leader()
	t.Logf("%s kill %d", time.Now().UTC().Format("15:04:05.000"), l)
	c.Kill(l)
	time.Sleep(3 * time.Second)
	c.Restart(l)
	t.Logf("%s restarted %d", time.Now().UTC().Format("15:04:05.000"), l)
	time.Sleep(5 * time.Second)
	waitAcks(20)
	t.Logf("%s quorum lost", time.Now().UTC().Format("15:04:05.000"))
	c.Kill(0)
	c.Kill(1)
	time.Sleep(6 * time.Second)
	c.Restart(0)
	c.Restart(1)
	t.Logf("%s quorum back", time.Now().UTC().Format("15:04:05.000"))
	time.Sleep(5 * time.Second)
	waitAcks(20)
	close(stop)
	wg.Wait()
	t.Logf("%d acknowledged, %d opens on the other hosts: %d stale, %d failed (retryable)", acked.Load(), opens.Load(), stale.Load(), failed.Load())
}

// TestCloseToOpenAfterSkippedMessages: an open on host B right after
// host A's acknowledgement reads that write or a later one, also when
// B, catching up, finds the acknowledged message already deleted (the
// tree bucket keeps one value per key) because A wrote the path again
// after B learned the stream's last sequence. B's consumer is stopped,
// so B reads what it lacks from the stream's leader after the deletion.
// Before, B applied the stream up to that sequence without the deleted
// message and read the path as it was before it.
func TestCloseToOpenAfterSkippedMessages(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("sk%d", depots.Add(1))
	hs := hostsOf(t, c, prefix, 2)
	a, b := hs[0], hs[1].(*nats.Store)
	var again func()
	nats.AfterRound(b, func() {
		if f := again; f != nil {
			again = nil
			f()
		}
	})
	put := func(p, data string) uint64 {
		t.Helper()
		res, err := a.Put(t.Context(), store.PutRequest{Path: p, Data: []byte(data)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Entry.Revision
	}
	for i := range 5 {
		p := fmt.Sprintf("/sk/f%d", i)
		put(p, "old")
		if got, err := readOnce(b, p); err != nil || string(got) != "old" {
			t.Fatalf("%s on B: %q %v", p, got, err)
		}
		nats.StopFollowing(b)
		acked := put(p, "acknowledged")
		put(fmt.Sprintf("/sk/other%d", i), "x") // the stream's last sequence when B asks
		again = func() { put(p, "newer") }      // deletes the acknowledged message
		got, err := readOnce(b, p)
		if err != nil || (string(got) != "acknowledged" && string(got) != "newer") {
			t.Errorf("open of %s on B after A acknowledged revision %d: %q %v", p, acked, got, err)
		}
	}
}
