package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// changes reads every kept change within prefix after from, limit a page,
// and returns them with the last page.
func changes(t testing.TB, s store.Store, prefix string, from uint64, limit int) ([]store.Event, store.ChangePage) {
	t.Helper()
	var all []store.Event
	after := from
	for range 100_000 {
		page, err := s.Changes(t.Context(), prefix, after, limit)
		if err != nil {
			t.Fatalf("Changes(%s, %d, %d): %v", prefix, after, limit, err)
		}
		if page.Resync {
			t.Fatalf("Changes(%s, %d): resync (oldest %d)", prefix, after, page.Oldest)
		}
		if len(page.Events) > max(limit, 1) || page.Next < after {
			t.Fatalf("Changes(%s, %d, %d): %d events, next %d", prefix, after, limit, len(page.Events), page.Next)
		}
		all = append(all, page.Events...)
		if page.Next == page.Revision {
			return all, page
		}
		after = page.Next
	}
	t.Fatalf("Changes(%s) never reached the store's revision", prefix)
	return nil, store.ChangePage{}
}

// describeAll is the events as "kind path@revision" lines, for comparing.
func describeAll(evs []store.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%v %s@%d %s %d", ev.Kind, ev.Path, ev.Revision, ev.Entry.SHA256, ev.Entry.Ino)
		if ev.From != "" {
			fmt.Fprintf(&b, " from %s", ev.From)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// drain reads the events ch delivers up to revision rev.
func drain(t testing.TB, ch <-chan store.Event, rev uint64) []store.Event {
	t.Helper()
	var evs []store.Event
	for len(evs) == 0 || evs[len(evs)-1].Revision < rev {
		evs = append(evs, NextEvent(t, ch))
	}
	return evs
}

// changeWorkload makes one change of each sort below /c (a file and a
// directory moved among them) and one outside it, and returns the store's
// revision after them.
func changeWorkload(t testing.TB, s store.Store) uint64 {
	t.Helper()
	put(t, s, "/c/a", []byte("a1"))
	put(t, s, "/c/a", []byte("a2"))
	put(t, s, "/other/x", []byte("x"))
	if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/c/p", Kind: store.KindFile, Size: 5}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/c/a", To: "/c/b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/c/b", To: "/c/d/b"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/c/d", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "/c/t/x", []byte("x"))
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/c/t", To: "/c/u"}); err != nil {
		t.Fatal(err)
	}
	return revision(t, s)
}

// testChanges: Changes reads what Watch delivers, filtered by prefix, in
// pages, and says resync, with the oldest revision it keeps, for a cursor
// older than that.
func testChanges(t *testing.T, open Opener) {
	t.Run("SameAsWatch", func(t *testing.T) {
		s := open(t, Config{})
		ch := watch(t, s, "/", 0)
		rev := changeWorkload(t, s)
		watched := drain(t, ch, rev)
		all, last := changes(t, s, "/", 0, 1000)
		if got, want := describeAll(all), describeAll(watched); got != want {
			t.Errorf("Changes(/, 0):\n%s\nWatch(/, 0):\n%s", got, want)
		}
		if last.Oldest != 0 || last.Revision != rev || last.Next != rev {
			t.Errorf("last page %+v, want oldest 0, next and revision %d", last, rev)
		}
		for i, ev := range all {
			if i > 0 && ev.Revision <= all[i-1].Revision {
				t.Errorf("change %d at %d after %d", i, ev.Revision, all[i-1].Revision)
			}
			if ev.Path != ev.Entry.Path || ev.Entry.Ino == 0 {
				t.Errorf("change %s carries entry %+v", describe(ev), ev.Entry)
			}
		}
		want := []string{"created /c/a", "updated /c/a", "created /c/p", "created /c/b", "removed /c/a", "removed /c/d/b"}
		var got []string
		for _, ev := range all {
			got = append(got, describe(ev))
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("changes %q lack %q", got, w)
			}
		}
		// Only the new side of the move says where it came from.
		var from []string
		for _, ev := range all {
			if ev.From != "" {
				from = append(from, describe(ev)+" from "+ev.From)
			}
		}
		if want := "[created /c/b from /c/a created /c/u from /c/t created /c/u/x from /c/t/x]"; fmt.Sprint(from) != want {
			t.Errorf("changes that came from a move: %q, want %s", from, want)
		}
	})
	t.Run("PrefixAndPages", func(t *testing.T) {
		s := open(t, Config{})
		changeWorkload(t, s)
		all, _ := changes(t, s, "/", 0, 1000)
		var below []store.Event
		for _, ev := range all {
			if depotpath.Within(ev.Path, "/c") {
				below = append(below, ev)
			}
		}
		for _, limit := range []int{1, 2, 3, 1000} {
			got, _ := changes(t, s, "/c", 0, limit)
			if describeAll(got) != describeAll(below) {
				t.Errorf("Changes(/c) in pages of %d:\n%s\nwant:\n%s", limit, describeAll(got), describeAll(below))
			}
		}
		// A cursor in the middle: exactly the changes after it.
		mid := below[2].Revision
		got, _ := changes(t, s, "/c", mid, 1000)
		if describeAll(got) != describeAll(below[3:]) {
			t.Errorf("Changes(/c, %d):\n%s\nwant:\n%s", mid, describeAll(got), describeAll(below[3:]))
		}
		if _, err := s.Changes(t.Context(), "c/../", 0, 1); err == nil {
			t.Error("Changes of a path that is not clean succeeded")
		}
	})
	t.Run("Resync", func(t *testing.T) {
		const keep = 8
		s := open(t, Config{History: keep})
		for i := range 3 * keep {
			put(t, s, fmt.Sprintf("/r/%02d", i), []byte{byte(i)})
		}
		rev := revision(t, s)
		page, err := s.Changes(t.Context(), "/r", 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !page.Resync || len(page.Events) != 0 || page.Oldest == 0 || page.Oldest >= rev || page.Next != rev {
			t.Fatalf("Changes(/r, 0) with %d kept: %+v; want resync, the oldest kept revision, next %d", keep, page, rev)
		}
		got, _ := changes(t, s, "/r", page.Oldest, 100)
		if len(got) == 0 || got[len(got)-1].Revision != rev || got[0].Revision <= page.Oldest {
			t.Errorf("Changes(/r, oldest %d): %s", page.Oldest, describeAll(got))
		}
		if p, err := s.Changes(t.Context(), "/r", page.Oldest-1, 100); err != nil || !p.Resync {
			t.Errorf("Changes(/r, oldest-1): %+v, %v; want resync", p, err)
		}
	})
}

// testChangesReopen: the changes, and a watch from an old revision, are
// the same once the depot is opened again.
func testChangesReopen(t *testing.T, depot DepotOpener) {
	open := depot(t)
	s := open(Config{})
	rev := changeWorkload(t, s)
	before, _ := changes(t, s, "/", 0, 1000)
	s = open(Config{})
	after, last := changes(t, s, "/", 0, 1000)
	if describeAll(after) != describeAll(before) || last.Revision != rev {
		t.Errorf("after reopening, Changes(/, 0) at %d:\n%s\nbefore:\n%s", last.Revision, describeAll(after), describeAll(before))
	}
	ch := watch(t, s, "/c", before[1].Revision)
	if ev := NextEvent(t, ch); ev.Kind == store.EventResync || ev.Revision <= before[1].Revision {
		t.Errorf("after reopening, the first event watching /c from %d: %s at %d", before[1].Revision, describe(ev), ev.Revision)
	}
	put(t, s, "/c/new", []byte("n"))
	more, _ := changes(t, s, "/c", rev, 10)
	if len(more) != 1 || more[0].Path != "/c/new" || more[0].Kind != store.EventCreated {
		t.Errorf("a change after reopening: %s", describeAll(more))
	}
}

// testChangesOnEveryHost: both hosts read the same changes, whichever
// wrote them.
func testChangesOnEveryHost(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	changeWorkload(t, a)
	put(t, b, "/c/from-b", []byte("b"))
	rev := revision(t, b)
	var onA []store.Event
	deadline := time.Now().Add(waitTimeout)
	for {
		var last store.ChangePage
		onA, last = changes(t, a, "/", 0, 1000)
		if last.Revision >= rev || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	syncStore(t, b)
	onB, _ := changes(t, b, "/", 0, 1000)
	if describeAll(onA) != describeAll(onB) || len(onA) == 0 || onA[len(onA)-1].Path != "/c/from-b" {
		t.Errorf("host a's changes:\n%s\nhost b's:\n%s", describeAll(onA), describeAll(onB))
	}
}
