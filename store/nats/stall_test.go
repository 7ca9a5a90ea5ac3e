package nats_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats/natstest"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// connectTo connects to node i of c alone.
func connectTo(t *testing.T, c *natstest.Cluster, i int) *natsgo.Conn {
	t.Helper()
	nc, err := natsgo.Connect(c.Nodes[i].URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestLeaderKillStall: a host writes without pause while the server
// leading both the tree stream and the cluster's meta layer is killed, and
// the test reports how long after the cluster elected a new stream leader
// the first write sent after the kill was acknowledged: what depotfs adds
// to what JetStream itself needs. The goal is half a second; the test
// fails at 2 s. (Losing the meta leader too is the worst case: the host's
// consumer, which lived on the dead server, cannot be created again until
// the meta layer has elected its own leader, seconds after the stream.)
func TestLeaderKillStall(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	prefix := fmt.Sprintf("s%d", depots.Add(1))
	a := hostsOf(t, c, prefix, 1)[0]
	stream := treeStream(prefix)
	var victim int
	waitUntil(t, 10*time.Second, "a meta leader", func() bool { victim = c.MetaLeader(); return victim >= 0 })
	moveLeader(t, c, stream, victim)

	var mu sync.Mutex
	var acks [][2]time.Time // each acknowledged write's start and acknowledgement
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
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err := a.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/stall/f%d", i%100), Data: []byte(fmt.Sprint(i))})
			cancel()
			if err == nil {
				mu.Lock()
				acks = append(acks, [2]time.Time{start, time.Now()})
				mu.Unlock()
			}
		}
	}()
	waitUntil(t, 10*time.Second, "writes before the kill", func() bool { mu.Lock(); defer mu.Unlock(); return len(acks) > 20 })

	// Watch for the new leader from a connection to a surviving node.
	js, err := jetstream.New(connectTo(t, c, (victim+1)%3))
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(victim)
	killed := time.Now()
	var elected time.Time
	waitUntil(t, 30*time.Second, "a new leader", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		if err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader != "" && st.CachedInfo().Cluster.Leader != c.Nodes[victim].Name {
			elected = time.Now()
			return true
		}
		return false
	})
	var resumed time.Time
	waitUntil(t, 30*time.Second, "a write sent after the kill acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, at := range acks {
			if at[0].After(killed) {
				resumed = at[1]
				return true
			}
		}
		return false
	})
	close(stop)
	<-done
	stall := resumed.Sub(elected)
	t.Logf("leader killed; new leader seen %v later; first write acknowledged %v after that (%v after the kill)",
		elected.Sub(killed).Round(time.Millisecond), stall.Round(time.Millisecond), resumed.Sub(killed).Round(time.Millisecond))
	// The goal is half a second, which a commit attempt (500 ms, retried
	// 100 ms later) may just miss on a loaded machine (568 ms at load 42
	// with the package's tests running beside it); the stalls this test
	// was written for took 5-7 s. It fails at 2 s, as
	// TestWatchLagAfterLeaderKill does, and reports a miss of the goal.
	if stall > 500*time.Millisecond {
		t.Logf("writes resumed %v after the election: the goal is 500ms", stall.Round(time.Millisecond))
	}
	if stall > 2*time.Second {
		t.Errorf("writes resumed %v after the election, want within 2s (the goal is 500ms)", stall.Round(time.Millisecond))
	}
}
