package watchhub_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/watchhub"
)

func events(from, to uint64) []store.Event {
	var evs []store.Event
	for r := from; r <= to; r++ {
		dir := "/a"
		if r%2 == 0 {
			dir = "/b"
		}
		evs = append(evs, store.Event{Kind: store.EventCreated, Path: fmt.Sprintf("%s/%d", dir, r), Revision: r})
	}
	return evs
}

// watch starts a watcher and returns a function receiving its next event.
func watch(t *testing.T, h *watchhub.Hub, prefix string, since uint64) func() store.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan store.Event, watchhub.Buffer)
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.Serve(ctx, nil, out, prefix, since)
	}()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	return func() store.Event {
		t.Helper()
		select {
		case ev, ok := <-out:
			if !ok {
				t.Fatal("watch channel closed")
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10s")
		}
		return store.Event{}
	}
}

func TestResyncAndOrder(t *testing.T) {
	var h watchhub.Hub
	h.Init(4, 10)
	early := watch(t, &h, "/", 5)
	if ev := early(); ev.Kind != store.EventResync || ev.Revision != 10 || ev.Path != "/" {
		t.Fatalf("watcher from before the hub's history: %+v, want a resync at 10", ev)
	}
	live := watch(t, &h, "/a", 10)
	h.Publish(events(11, 14), 14)
	for _, want := range []uint64{11, 13} {
		if ev := live(); ev.Revision != want {
			t.Fatalf("live watcher of /a: revision %d, want %d", ev.Revision, want)
		}
	}
	if ev := early(); ev.Revision != 11 {
		t.Fatalf("resynced watcher: revision %d, want 11", ev.Revision)
	}
	h.Publish(events(15, 16), 16) // the ring keeps 13..16
	if got := h.Revision(); got != 16 {
		t.Fatalf("Revision %d, want 16", got)
	}
	if ev := live(); ev.Revision != 15 {
		t.Fatalf("live watcher of /a: revision %d, want 15", ev.Revision)
	}
	late := watch(t, &h, "/", 12)
	for _, want := range []uint64{13, 14, 15, 16} {
		if ev := late(); ev.Revision != want {
			t.Fatalf("watcher from 12: revision %d, want %d", ev.Revision, want)
		}
	}
	lost := watch(t, &h, "/b", 11)
	if ev := lost(); ev.Kind != store.EventResync || ev.Revision != 16 || ev.Path != "/b" {
		t.Fatalf("watcher from an event the ring dropped: %+v, want a resync at 16", ev)
	}
	h.Publish(events(17, 18), 18)
	if ev := lost(); ev.Revision != 18 {
		t.Fatalf("after the resync: revision %d, want 18", ev.Revision)
	}
}

func TestSetFromAndWake(t *testing.T) {
	var h watchhub.Hub
	h.Init(8, 0)
	changed := h.Changed()
	h.Wake()
	select {
	case <-changed:
	default:
		t.Fatal("Wake did not close the Changed channel")
	}
	h.Publish(nil, 7) // a store replaying history it does not keep
	h.SetFrom(7)
	w := watch(t, &h, "/", 3)
	if ev := w(); ev.Kind != store.EventResync || ev.Revision != 7 {
		t.Fatalf("watcher from before SetFrom: %+v, want a resync at 7", ev)
	}
	h.Publish(nil, 5)
	if got := h.Revision(); got != 7 {
		t.Fatalf("Revision went back to %d", got)
	}
}

func TestServeStops(t *testing.T) {
	var h watchhub.Hub
	h.Init(4, 0)
	done := make(chan struct{})
	out := make(chan store.Event)
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.Serve(context.Background(), done, out, "/", 0)
	}()
	close(done)
	<-served
	if _, ok := <-out; ok {
		t.Fatal("Serve did not close its channel")
	}
}
