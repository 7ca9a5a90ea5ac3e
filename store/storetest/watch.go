package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// NextEvent returns the next event on ch, failing t if none arrives within
// ten seconds or ch is closed. Like t.Fatal, it must be called from the
// test's goroutine.
func NextEvent(t testing.TB, ch <-chan store.Event) store.Event {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return ev
	case <-timer.C:
		t.Fatal("no event within the deadline")
	}
	panic("unreachable")
}

// WaitClosed fails t unless ch is closed within ten seconds; events still
// buffered are discarded. Like t.Fatal, it must be called from the test's
// goroutine.
func WaitClosed(t testing.TB, ch <-chan store.Event) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timer.C:
			t.Fatal("watch channel not closed within the deadline")
		}
	}
}

func describe(ev store.Event) string { return fmt.Sprintf("%v %s", ev.Kind, ev.Path) }

// expect reads len(want) events and compares their kinds and paths; it
// checks revisions increase and returns the events.
func expect(t testing.TB, ch <-chan store.Event, after uint64, want ...string) []store.Event {
	t.Helper()
	var evs []store.Event
	for i, w := range want {
		ev := NextEvent(t, ch)
		evs = append(evs, ev)
		if got := describe(ev); got != w {
			t.Fatalf("event %d = %s (rev %d), want %s", i, got, ev.Revision, w)
		}
		if ev.Revision <= after {
			t.Fatalf("event %s has revision %d, not above %d", w, ev.Revision, after)
		}
		after = ev.Revision
	}
	return evs
}

func watch(t testing.TB, s store.Store, prefix string, since uint64) <-chan store.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	ch, err := s.Watch(ctx, prefix, since)
	if err != nil {
		t.Fatalf("Watch(%s, %d): %v", prefix, since, err)
	}
	return ch
}

func testWatch(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("Order", func(t *testing.T) {
		s := open(t)
		ch := watch(t, s, "/", 0)
		put(t, s, "/a/b/f", []byte("1"))
		put(t, s, "/a/b/f", []byte("2"))
		put(t, s, "/a/b/f", []byte("2"))
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/a/p", Kind: store.KindFile, Size: 1}}}); err != nil {
			t.Fatal(err)
		}
		put(t, s, "/a/p", []byte("p"))
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a", Recursive: true}); err != nil {
			t.Fatal(err)
		}
		evs := expect(t, ch, 0,
			"created /a", "created /a/b", "created /a/b/f", "updated /a/b/f",
			"created /a/p", "updated /a/p")
		// A recursive remove reports children before their parents; the
		// order of siblings is the store's choice.
		removed := map[string]int{}
		for i := range 4 {
			ev := NextEvent(t, ch)
			if ev.Kind != store.EventRemoved || ev.Revision <= evs[len(evs)-1].Revision {
				t.Fatalf("event %s at %d, want a removal after %d", describe(ev), ev.Revision, evs[len(evs)-1].Revision)
			}
			removed[ev.Path] = i
			evs = append(evs, ev)
		}
		if len(removed) != 4 || removed["/a"] != 3 || removed["/a/b/f"] > removed["/a/b"] {
			t.Errorf("removal order %v, want children before parents", removed)
		}
		for _, ev := range evs {
			if ev.Entry.Path != ev.Path || ev.Entry.Ino == 0 || ev.Entry.Kind == 0 {
				t.Errorf("event %s carries entry %+v", describe(ev), ev.Entry)
			}
			if ev.Kind != store.EventRemoved && ev.Entry.Revision != ev.Revision {
				t.Errorf("event %s at %d carries an entry at %d", describe(ev), ev.Revision, ev.Entry.Revision)
			}
		}
		if rev := revision(t, s); evs[len(evs)-1].Revision != rev {
			t.Errorf("last event at %d, store at %d", evs[len(evs)-1].Revision, rev)
		}
	})
	t.Run("Prefix", func(t *testing.T) {
		s := open(t)
		ch := watch(t, s, "/a", 0)
		put(t, s, "/ab/x", []byte("no"))
		put(t, s, "/a/x", []byte("yes"))
		put(t, s, "/b", []byte("no"))
		if _, err := s.Put(t.Context(), store.PutRequest{Path: "/a"}); err == nil {
			t.Fatal("a file over a directory was accepted")
		}
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/x"}); err != nil {
			t.Fatal(err)
		}
		expect(t, ch, 0, "created /a", "created /a/x", "removed /a/x", "removed /a")
	})
	t.Run("Since", func(t *testing.T) {
		s := open(t)
		put(t, s, "/one", []byte("1"))
		mid := revision(t, s)
		put(t, s, "/two", []byte("2"))
		put(t, s, "/three", []byte("3"))
		expect(t, watch(t, s, "/", mid), mid, "created /two", "created /three")
		ch := watch(t, s, "/", revision(t, s))
		put(t, s, "/four", []byte("4"))
		expect(t, ch, 0, "created /four")
	})
	t.Run("Resync", func(t *testing.T) {
		// Any event a store sends for history it no longer has must be a
		// well-formed resync; a store with enough history sends none here.
		s := open(t)
		put(t, s, "/x/f", []byte("1"))
		ch := watch(t, s, "/x", 0)
		ev := NextEvent(t, ch)
		if ev.Kind == store.EventResync && (ev.Path != "/x" || ev.Revision != revision(t, s)) {
			t.Errorf("resync %+v, want path /x at the current revision", ev)
		}
	})
	t.Run("SlowWatcher", func(t *testing.T) {
		s := open(t)
		watch(t, s, "/", 0) // never read
		ctx := withinDeadline(t)
		for i := range 100 {
			if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i), Data: []byte{byte(i)}}); err != nil {
				t.Fatalf("a write waited for a watcher that does not read: %v", err)
			}
		}
	})
	t.Run("Cancel", func(t *testing.T) {
		s := open(t)
		ctx, cancel := context.WithCancel(t.Context())
		ch, err := s.Watch(ctx, "/", 0)
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "/f", []byte("x"))
		cancel()
		WaitClosed(t, ch)
	})
	t.Run("Rejected", func(t *testing.T) {
		s := open(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := s.Watch(ctx, "/", 0); err == nil {
			t.Error("Watch with a cancelled context succeeded")
		}
	})
}

func testRevision(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	if rev := revision(t, s); rev != 0 {
		t.Errorf("new store at revision %d, want 0", rev)
	}
	last := uint64(0)
	step := func(what string, changes int) {
		t.Helper()
		rev := revision(t, s)
		if rev < last+uint64(changes) || (changes == 0 && rev != last) {
			t.Errorf("%s: revision %d after %d, want at least %d more", what, rev, last, changes)
		}
		last = rev
	}
	put(t, s, "/a/b", []byte("1"))
	step("Put with a parent", 2)
	put(t, s, "/a/b", []byte("1"))
	step("identical Put", 0)
	put(t, s, "/a/b", []byte("2"))
	step("update", 1)
	if e := stat(t, s, "/a/b"); e.Revision != last {
		t.Errorf("entry at %d, store at %d", e.Revision, last)
	}
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/b"}); err != nil {
		t.Fatal(err)
	}
	step("Remove with a parent", 2)
}
