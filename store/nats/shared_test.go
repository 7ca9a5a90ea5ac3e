package nats_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// shared is the cluster of the tests that neither stop nor pause a
// server, each on depots of its own: one cluster for the package instead
// of one per test (each start waits through a first election), started
// by the first test that asks for it and stopped by TestMain. The streams
// of a depot whose test is done are deleted meanwhile (dropAtCleanup), so
// that the cluster does not carry the raft groups of every depot of the
// run.
var shared struct {
	once   sync.Once
	c      atomic.Pointer[natstest.Cluster] // set once started
	err    error
	nc     *natsgo.Conn  // the dropper's
	drops  chan string   // the depots to delete
	stop   chan struct{} // closed by stopShared
	done   chan struct{} // closed when the dropper has returned
	mu     sync.Mutex
	marked map[string]bool // the depots dropAtCleanup was called for
}

// sharedTimeout is the Timeout of hosts on the shared cluster: the
// stream creations of all the tests running at once queue at its one
// meta leader, and at the machine's usual load (20-60) one took longer
// than the default 10 s.
const sharedTimeout = 30 * time.Second

// sharedCluster returns the package's shared cluster.
func sharedCluster(t testing.TB) *natstest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		c, err := natstest.Launch(3)
		if err != nil {
			shared.err = err
			return
		}
		if shared.nc, err = natsgo.Connect(c.URL()); err != nil {
			c.Stop()
			shared.err = err
			return
		}
		shared.drops, shared.stop, shared.done = make(chan string, 4096), make(chan struct{}), make(chan struct{})
		shared.marked = map[string]bool{}
		go dropper(shared.nc)
		shared.c.Store(c)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c.Load()
}

// isShared reports whether c is the shared cluster.
func isShared(c *natstest.Cluster) bool { return c != nil && c == shared.c.Load() }

// dropAtCleanup deletes the streams of the depot prefix once t and its
// subtests are done, when c is the shared cluster. Called before the
// first host of the depot is opened, it runs after every host opened in
// t has closed (cleanups run last first).
func dropAtCleanup(t testing.TB, c *natstest.Cluster, prefix string) {
	if !isShared(c) {
		return
	}
	shared.mu.Lock()
	first := !shared.marked[prefix]
	shared.marked[prefix] = true
	shared.mu.Unlock()
	if first {
		t.Cleanup(func() {
			select {
			case shared.drops <- prefix:
			case <-shared.done:
			}
		})
	}
}

// dropper deletes, through nc, the streams of the depots dropAtCleanup
// sends until stopShared. A deletion that fails leaves the streams to
// die with the cluster.
func dropper(nc *natsgo.Conn) {
	defer close(shared.done)
	js, err := jetstream.New(nc)
	if err != nil {
		return
	}
	for {
		select {
		case <-shared.stop:
			return
		case prefix := <-shared.drops:
			for _, name := range []string{"KV_" + prefix + "-tree", prefix + "-chunks", "KV_" + prefix + "-settings", "KV_" + prefix + "-requests"} {
				ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
				js.DeleteStream(ctx, name)
				cancel()
			}
		}
	}
}

// stopShared stops the shared cluster, if a test started it.
func stopShared() {
	c := shared.c.Load()
	if c == nil {
		return
	}
	close(shared.stop)
	shared.nc.Close() // a deletion under way fails at once
	<-shared.done
	c.Stop()
}
