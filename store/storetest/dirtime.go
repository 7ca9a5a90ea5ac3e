package storetest

import (
	"math"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// testDirTimes checks that a directory's mtime and ctime move when an entry
// is created in it, removed from it or moved into or out of it, or a file
// in it gets new content (a rename-replace on a local filesystem), and
// only then: programs (Python's import cache, git's untracked cache,
// rsync, find -newer) notice changes by their directory's mtime.
func testDirTimes(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, Config{Now: clk.Now})
	// moved fails unless dir's mtime and ctime are the clock's time now.
	moved := func(what, dir string) {
		t.Helper()
		e := stat(t, s, dir)
		if now := clk.Now(); !e.MTime.Equal(now) || !e.Updated.Equal(now) {
			t.Errorf("after %s, %s has mtime %v and ctime %v, want both %v", what, dir, e.MTime, e.Updated, now)
		}
	}
	// kept fails unless dir's mtime is still at.
	kept := func(what, dir string, at time.Time) {
		t.Helper()
		if e := stat(t, s, dir); !e.MTime.Equal(at) {
			t.Errorf("after %s, %s has mtime %v, want it unchanged at %v", what, dir, e.MTime, at)
		}
	}

	put(t, s, "/d/a", []byte("a"))
	moved("creating /d/a", "/d")
	moved("creating /d", "/")
	start := clk.Now()

	clk.Advance(time.Second)
	put(t, s, "/d/b", []byte("b"))
	moved("creating /d/b", "/d")
	kept("creating /d/b", "/", start)

	clk.Advance(time.Second)
	put(t, s, "/d/b", []byte("b2"))
	moved("updating /d/b", "/d")

	clk.Advance(time.Second)
	if _, err := s.Put(t.Context(), store.PutRequest{Path: "/d/b", Data: []byte("b2"), Mode: 0o600}); err != nil {
		t.Fatal(err)
	}
	kept("changing only the mode of /d/b", "/d", clk.Now().Add(-time.Second))

	clk.Advance(time.Second)
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/d/b"}); err != nil {
		t.Fatal(err)
	}
	moved("removing /d/b", "/d")

	clk.Advance(time.Second)
	put(t, s, "/e/x", []byte("x"))
	clk.Advance(time.Second)
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/d/a", To: "/e/a"}); err != nil {
		t.Fatal(err)
	}
	moved("moving /d/a to /e/a", "/e")
	// /d went away with its last child: the root lost an entry.
	moved("moving /d/a out of /d", "/")

	clk.Advance(time.Second)
	if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/e/a", To: "/e/c"}); err != nil {
		t.Fatal(err)
	}
	moved("copying /e/a to /e/c", "/e")

	clk.Advance(time.Second)
	if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/e/p", Kind: store.KindFile, Size: 1}}}); err != nil {
		t.Fatal(err)
	}
	moved("declaring /e/p", "/e")

	es, err := s.ReadDir(t.Context(), "/")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || !es[0].MTime.Equal(clk.Now()) {
		t.Errorf("ReadDir(/) = %+v, want /e with mtime %v", es, clk.Now())
	}
}

// testSnapshotDirTimes checks that a snapshot shows its directories, the
// root included, with the times they had at its revision, however the
// live ones move later; that keeping them makes no version; and that
// deleting the snapshots that saw them releases them.
func testSnapshotDirTimes(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, Config{Now: clk.Now})
	ctx := t.Context()
	// at fails unless p, read at rev by StatAt and in its parent's
	// ReadDirAt, has mtime and ctime want.
	at := func(what, p string, rev uint64, want time.Time) {
		t.Helper()
		e, err := s.StatAt(ctx, p, rev)
		if err != nil {
			t.Fatalf("StatAt(%s, %d): %v", p, rev, err)
		}
		if !e.MTime.Equal(want) || !e.Updated.Equal(want) {
			t.Errorf("%s: StatAt(%s, %d) has mtime %v and ctime %v, want both %v", what, p, rev, e.MTime, e.Updated, want)
		}
		if p == "/" {
			return
		}
		es, err := s.ReadDirAt(ctx, "/", rev)
		if err != nil {
			t.Fatalf("ReadDirAt(/, %d): %v", rev, err)
		}
		for _, e := range es {
			if e.Path == p && !e.MTime.Equal(want) {
				t.Errorf("%s: ReadDirAt(/, %d) lists %s with mtime %v, want %v", what, rev, p, e.MTime, want)
			}
		}
	}
	kept := func(what string, want int64) {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.DirTimes != want || st.Versions != 0 {
			t.Errorf("%s: Stats has DirTimes %d and Versions %d, want %d and 0", what, st.DirTimes, st.Versions, want)
		}
	}

	put(t, s, "/d/a", []byte("a"))
	t0 := clk.Now()
	kept("no snapshot", 0)
	s1 := snapshotOf(t, s, store.SnapshotRequest{Name: "one", Prefix: "/"})

	clk.Advance(time.Hour)
	put(t, s, "/d/b", []byte("b"))
	put(t, s, "/e/x", []byte("x")) // moves the root's times
	clk.Advance(time.Hour)
	put(t, s, "/d/c", []byte("c")) // no snapshot saw t1: nothing kept
	t2 := clk.Now()
	at("live", "/d", math.MaxUint64, t2)
	at("snapshot one", "/d", s1.Revision, t0)
	at("snapshot one", "/", s1.Revision, t0)
	kept("after snapshot one", 2)

	s2 := snapshotOf(t, s, store.SnapshotRequest{Name: "two", Prefix: "/d"})
	clk.Advance(time.Hour)
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/d/a"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "/f", []byte("f")) // the root's times: snapshot two does not cover the root
	at("snapshot two", "/d", s2.Revision, t2)
	at("snapshot one, after snapshot two", "/d", s1.Revision, t0)
	at("snapshot one, after snapshot two", "/", s1.Revision, t0)
	at("live, before the snapshots", "/", s1.Revision-1, t0)
	if h, err := s.History(ctx, "/d"); err != nil || len(h) != 1 {
		t.Errorf("History(/d) = %+v, %v; want the live entry alone", h, err)
	}
	// /d/a is a held version now; the times are not.
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.DirTimes != 3 || st.Versions != 1 {
		t.Errorf("with two snapshots: Stats has DirTimes %d and Versions %d, want 3 and 1", st.DirTimes, st.Versions)
	}

	if err := s.DeleteSnapshot(ctx, s1.Name); err != nil {
		t.Fatal(err)
	}
	at("snapshot two, after deleting one", "/d", s2.Revision, t2)
	if st, err := s.Stats(ctx); err != nil || st.DirTimes != 1 {
		t.Errorf("after deleting snapshot one: Stats has DirTimes %d (%v), want 1 (snapshot two's)", st.DirTimes, err)
	}
	if err := s.DeleteSnapshot(ctx, s2.Name); err != nil {
		t.Fatal(err)
	}
	kept("after deleting both", 0)
}
