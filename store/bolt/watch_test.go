package bolt_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

func TestWatchResync(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{History: 4})
	for i := range 6 {
		mustPut(t, s, fmt.Sprintf("/f%d", i), []byte{byte(i)})
	}
	rev, _ := s.Revision(ctx)

	// Revisions 1 and 2 are no longer held.
	ch, err := s.Watch(t.Context(), "/", 1)
	if err != nil {
		t.Fatal(err)
	}
	if ev := storetest.NextEvent(t, ch); ev.Kind != store.EventResync || ev.Revision != rev || ev.Path != "/" {
		t.Errorf("watching from 1 with 4 events kept: %+v, want a resync at %d", ev, rev)
	}
	mustPut(t, s, "/next", nil)
	if ev := storetest.NextEvent(t, ch); ev.Path != "/next" {
		t.Errorf("after the resync: %+v", ev)
	}

	// The last 4 revisions are held: replayed, no resync.
	ch, err = s.Watch(t.Context(), "/", rev-3)
	if err != nil {
		t.Fatal(err)
	}
	for want := rev - 2; want <= rev+1; want++ {
		if ev := storetest.NextEvent(t, ch); ev.Kind == store.EventResync || ev.Revision != want {
			t.Fatalf("replay: %+v, want revision %d", ev, want)
		}
	}
}

// TestWatchFallsBehind: a watcher that does not read while far more events
// than the history holds are written gets a resync (one each time it falls
// behind), then the latest events; the writers never wait for it.
func TestWatchFallsBehind(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{History: 8})
	ch, err := s.Watch(t.Context(), "/", 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		mustPut(t, s, fmt.Sprintf("/f%d", i), nil)
	}
	last, _ := s.Revision(ctx)
	resyncs := 0
	prev := uint64(0)
	for prev < last {
		ev := storetest.NextEvent(t, ch)
		if ev.Revision <= prev && ev.Kind != store.EventResync {
			t.Fatalf("revision %d after %d", ev.Revision, prev)
		}
		if ev.Kind == store.EventResync {
			resyncs++
		}
		prev = ev.Revision
	}
	// The store's watcher may run between the puts, fill the channel and
	// fall behind again before the test reads: each time is one resync,
	// so a loaded machine sees two or three. None, or one per event,
	// would be the bug.
	if resyncs < 1 || resyncs > 100/8 {
		t.Errorf("%d resyncs for 100 writes past a history of 8, want between 1 and %d", resyncs, 100/8)
	}
}

// TestNoGoroutineLeak: watchers and the janitor stop on context
// cancellation and Close.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	s, _ := openTemp(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var chans []<-chan store.Event
	for i := range 10 {
		c := ctx
		if i%2 == 0 {
			c = context.Background()
		}
		ch, err := s.Watch(c, "/", 0)
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, ch)
	}
	mustPut(t, s, "/f", nil)
	cancel()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range chans {
		storetest.WaitClosed(t, ch)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		runtime.Gosched()
	}
}
