package storetest

import (
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
