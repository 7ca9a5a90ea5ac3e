package nats_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestCloseToOpenCutOff: host B reaches the cluster through one server,
// which stops answering (SIGSTOP) while host A keeps writing through the
// others. An open, a listing and a lookup on B after A's acknowledgement
// then fail with store.ErrUnavailable once B's write time limit passes:
// they never show B's older copy (before, an open that could not catch up
// in 500 ms read it). Once the server answers again, B reads A's write.
func TestCloseToOpenCutOff(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("cut%d", depots.Add(1))
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	first, err := nats.Open(t.Context(), c.Connect(t), &nats.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	leader := leaderOf(t, c, js, treeStream(prefix))
	if leader < 0 {
		t.Fatal("the tree stream has no leader")
	}
	via := (leader + 1) % 3
	a, err := nats.Open(t.Context(), connectTo(t, c, leader), &nats.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	const limit = 3 * time.Second
	b, err := nats.Open(t.Context(), connectTo(t, c, via), &nats.Options{Prefix: prefix, WriteTimeout: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if _, err := a.Put(t.Context(), store.PutRequest{Path: "/d/f", Data: []byte("old\n")}); err != nil {
		t.Fatal(err)
	}
	if got, err := readOnce(b, "/d/f"); err != nil || string(got) != "old\n" {
		t.Fatalf("B before the cut: %q, %v", got, err)
	}

	c.Pause(via)
	paused := true
	t.Cleanup(func() {
		if paused {
			c.Resume(via)
		}
	})
	for _, w := range []store.PutRequest{{Path: "/d/f", Data: []byte("new\n")}, {Path: "/d/g", Data: []byte("created\n")}} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		_, err := a.Put(ctx, w)
		cancel()
		if err != nil {
			t.Fatalf("A without one server: %v", err)
		}
	}
	start := time.Now()
	got, err := readOnce(b, "/d/f")
	took := time.Since(start)
	if err == nil {
		t.Errorf("an open on B cut off after A's acknowledgement read %q, want an error", got)
	} else if !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("an open on B cut off: %v, want store.ErrUnavailable", err)
	}
	if took < limit-100*time.Millisecond || took > limit+3*time.Second {
		t.Errorf("the open failed after %v, want about the write time limit %v", took, limit)
	}
	if _, err := b.Stat(t.Context(), "/d/g"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a lookup on B of a name A created: %v, want store.ErrUnavailable, not that it does not exist", err)
	}
	if es, err := b.ReadDir(t.Context(), "/d"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a listing on B: %v %v, want store.ErrUnavailable", es, err)
	}

	c.Resume(via)
	paused = false
	waitUntil(t, 30*time.Second, "B reads A's write", func() bool {
		got, err := readOnce(b, "/d/f")
		if err == nil && string(got) != "new\n" {
			t.Fatalf("B after the cut: %q", got)
		}
		return err == nil
	})
	if e, err := b.Stat(t.Context(), "/d/g"); err != nil || e.Size != int64(len("created\n")) {
		t.Errorf("B after the cut, the file A created: %+v %v", e, err)
	}
}

// TestCloseToOpenLeaderKill: host A writes while the server leading the
// tree stream (and, when it can, the meta layer) is killed and started
// again; right after each acknowledgement host B opens the file. An open
// may wait for the election or fail with store.ErrUnavailable, never read
// the older content. It reports stale, failed and slowest opens, and how
// long after each kill B applied A's first write acknowledged after it.
// One kill by default, five with DEPOTFS_SOAK=1.
func TestCloseToOpenLeaderKill(t *testing.T) {
	t.Parallel()
	kills := 1
	if soak {
		kills = 5
	}
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("lk%d", depots.Add(1))
	hs := hostsOf(t, c, prefix, 2)
	a, b := hs[0], hs[1]
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	var stale, failed, opens atomic.Int64
	var mu sync.Mutex
	var slow []time.Duration
	var acks []time.Time // when A acknowledged each write
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/lk/w%d/f%d", w, i%20)
				data := fmt.Appendf(nil, "write %d of worker %d\n", i, w)
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				_, err := a.Put(ctx, store.PutRequest{Path: p, Data: data})
				cancel()
				if err != nil {
					continue
				}
				mu.Lock()
				acks = append(acks, time.Now())
				mu.Unlock()
				start := time.Now()
				got, err := readOnce(b, p)
				took := time.Since(start)
				opens.Add(1)
				switch {
				case errors.Is(err, store.ErrUnavailable):
					failed.Add(1)
				case err != nil || !bytes.Equal(got, data):
					stale.Add(1)
					t.Errorf("open of %s on B after A's acknowledgement: %q %v, want %q", p, got, err, data)
				}
				mu.Lock()
				slow = append(slow, took)
				mu.Unlock()
			}
		})
	}
	for k := range kills {
		waitUntil(t, 30*time.Second, "writes before the kill", func() bool { mu.Lock(); defer mu.Unlock(); return len(acks) > 20*(k+1) })
		victim := leaderOf(t, c, js, treeStream(prefix))
		if victim < 0 {
			t.Fatal("the tree stream has no leader")
		}
		c.Kill(victim)
		killed := time.Now()
		waitUntil(t, 60*time.Second, "a write acknowledged after the kill", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return acks[len(acks)-1].After(killed)
		})
		t.Logf("kill %d: node %d; first write after it acknowledged %v later", k+1, victim, time.Since(killed).Round(time.Millisecond))
		c.Restart(victim)
	}
	close(stop)
	wg.Wait()
	slices.Sort(slow)
	t.Logf("%d leader kills: %d opens on B right after A's acknowledgements: %d stale, %d failed (retryable); open p50 %v p99 %v max %v",
		kills, opens.Load(), stale.Load(), failed.Load(), slow[len(slow)/2], slow[len(slow)*99/100], slow[len(slow)-1])
}
