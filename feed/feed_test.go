package feed_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func open(t *testing.T, o *bolt.Options) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func put(t *testing.T, s store.Store, p, data string) store.Entry {
	t.Helper()
	res, err := s.Put(t.Context(), store.PutRequest{Path: p, Data: []byte(data)})
	if err != nil {
		t.Fatal(err)
	}
	return res.Entry
}

// perms returns the permissions of a caller with grants, "" for full ones.
func perms(t *testing.T, grants ...string) policy.Set {
	t.Helper()
	host, err := policy.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := identity.Identity{Transport: "test", Subject: "t", Full: len(grants) == 0}
	for _, g := range grants {
		gr, err := grant.Parse(g)
		if err != nil {
			t.Fatal(err)
		}
		id.Grants = append(id.Grants, gr)
	}
	return host.For(id)
}

func read(t *testing.T, s store.Store, p policy.Set, req feed.Request) feed.Page {
	t.Helper()
	page, err := feed.Read(t.Context(), s, p, req)
	if err != nil {
		t.Fatalf("Read(%+v): %v", req, err)
	}
	return page
}

// describe is changes as "kind path [from F ]type revision size sha256".
func describe(cs []feed.Change) string {
	var out []string
	for _, c := range cs {
		from := ""
		if c.From != "" {
			from = "from " + c.From + " "
		}
		s := fmt.Sprintf("%s %s %s%s %d %d %s", c.Kind, c.Path, from, c.Type, c.Revision, c.Size, c.SHA256)
		if c.Count != 0 {
			s += fmt.Sprintf(" ×%d", c.Count)
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

func TestReadKindsAndGrants(t *testing.T) {
	s := open(t, nil)
	a := put(t, s, "/t1/a", "a")
	put(t, s, "/t2/b", "b")
	if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/t1/p", Kind: store.KindFile, Size: 9}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/t1/a"}); err != nil {
		t.Fatal(err)
	}
	one := perms(t, "*:/t1:r")
	page := read(t, s, one, feed.Request{Prefix: "/"})
	want := fmt.Sprintf("[created /t1 directory 1 0 ; created /t1/a file %d 1 %s; declared /t1/p file 5 9 ; removed /t1/a file 6 1 %s]", a.Revision, a.SHA256, a.SHA256)
	if got := describe(page.Changes); got != want {
		t.Errorf("tenant of /t1 reading /:\n got %s\nwant %s", got, want)
	}
	if page.Cursor != page.Revision || page.More || page.Resync {
		t.Errorf("page %+v: want the cursor at the revision", page)
	}
	if err := feed.CheckPrefix(one, "guide_changes", "/t2"); !errors.Is(err, policy.ErrDenied) {
		t.Errorf("tenant of /t1 watching /t2: %v", err)
	}
	for _, p := range []string{"/", "/t1", "/t1/sub"} {
		if err := feed.CheckPrefix(one, "guide_changes", p); err != nil {
			t.Errorf("tenant of /t1 watching %s: %v", p, err)
		}
	}
	if _, err := feed.Read(t.Context(), s, one, feed.Request{Prefix: "/", Since: page.Revision + 1}); !errors.Is(err, feed.ErrCursor) {
		t.Errorf("a cursor beyond the revision: %v", err)
	}
}

// TestReadMoves: the new side of a move is "moved", from the old path,
// and the old side "removed", for a file and for each entry of a tree; a
// caller who may not read the old path sees a creation naming no source.
func TestReadMoves(t *testing.T) {
	s := open(t, nil)
	put(t, s, "/in/a", "a")
	put(t, s, "/out/b", "bb")
	put(t, s, "/in/a", "a2") // onto which /out/b moves: the path had an entry
	from := read(t, s, perms(t), feed.Request{Prefix: "/"}).Cursor
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/out/b", To: "/in/a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Move(t.Context(), store.MoveRequest{From: "/in", To: "/kept/in"}); err != nil {
		t.Fatal(err)
	}
	r := from
	next := func() uint64 { r++; return r }
	sum := fmt.Sprintf("%x", sha256.Sum256([]byte("bb")))
	all := read(t, s, perms(t), feed.Request{Prefix: "/", Since: from})
	// The first move: /in/a replaced, /out/b and its parent gone. The
	// second: /kept made as a parent, the tree moved, the old one gone.
	want := fmt.Sprintf("[moved /in/a from /out/b file %d 2 SUM; removed /out/b file %d 2 SUM; removed /out directory %d 0 ; "+
		"created /kept directory %d 0 ; moved /kept/in from /in directory %d 0 ; moved /kept/in/a from /in/a file %d 2 SUM; "+
		"removed /in/a file %d 2 SUM; removed /in directory %d 0 ]",
		next(), next(), next(), next(), next(), next(), next(), next())
	want = strings.ReplaceAll(want, "SUM", sum)
	if got := describe(all.Changes); got != want {
		t.Errorf("moves read by a caller who may read everything:\n got %s\nwant %s", got, want)
	}
	// A tenant of /in and /kept: /out/b is none of its business.
	tenant := read(t, s, perms(t, "*:/in:r", "*:/kept:r"), feed.Request{Prefix: "/", Since: from, Max: 2})
	if got := describe(tenant.Changes); !strings.HasPrefix(got, "[updated /in/a file") || strings.Contains(got, "/out") {
		t.Errorf("the move from /out/b read by a tenant of /in: %s; want an update naming no source", got)
	}
}

func TestReadFoldsAndPages(t *testing.T) {
	s := open(t, nil)
	for i := range 5 {
		put(t, s, "/hot", fmt.Sprint(i))
		put(t, s, fmt.Sprintf("/cold/%d", i), "c")
	}
	last := put(t, s, "/hot", "last")
	all := read(t, s, perms(t), feed.Request{Prefix: "/hot", Max: 1000})
	if len(all.Changes) != 2 || all.Changes[0].Kind != feed.Created || all.Changes[1].Count != 5 || all.Changes[1].Revision != last.Revision {
		t.Errorf("five updates of /hot: %+v; want the creation, then one update counting 5", all.Changes)
	}
	// Pages of 2 over everything: every change once, in order.
	var got []feed.Change
	cursor := uint64(0)
	for {
		page := read(t, s, perms(t), feed.Request{Prefix: "/cold", Since: cursor, Max: 2})
		got = append(got, page.Changes...)
		if cursor = page.Cursor; !page.More {
			break
		}
	}
	if len(got) != 6 || got[0].Path != "/cold" || got[5].Path != "/cold/4" {
		t.Errorf("pages of /cold: %+v", got)
	}
}

func TestReadWaits(t *testing.T) {
	s := open(t, nil)
	rev := put(t, s, "/a", "1").Revision
	done := make(chan feed.Page, 1)
	go func() {
		page, _ := feed.Read(context.Background(), s, perms(t), feed.Request{Prefix: "/b", Since: rev, Wait: 10 * time.Second})
		done <- page
	}()
	put(t, s, "/a", "2") // not below /b: the poll goes on
	b := put(t, s, "/b", "b")
	select {
	case page := <-done:
		if len(page.Changes) != 1 || page.Changes[0].Revision != b.Revision || page.Cursor != b.Revision {
			t.Errorf("long poll of /b: %+v", page)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not return on a change")
	}
	start := time.Now()
	page := read(t, s, perms(t), feed.Request{Prefix: "/b", Since: b.Revision, Wait: 50 * time.Millisecond})
	if len(page.Changes) != 0 || page.Cursor != b.Revision || time.Since(start) < 50*time.Millisecond {
		t.Errorf("a poll with nothing new: %+v after %v", page, time.Since(start))
	}
}

func TestReadResync(t *testing.T) {
	s := open(t, &bolt.Options{History: 4})
	for i := range 10 {
		put(t, s, fmt.Sprintf("/f%d", i), "x")
	}
	page := read(t, s, perms(t), feed.Request{Prefix: "/", Since: 1})
	if !page.Resync || page.Oldest != page.Revision-4 || page.Cursor != page.Revision || len(page.Changes) != 0 {
		t.Errorf("a cursor older than the 4 changes kept: %+v", page)
	}
	page = read(t, s, perms(t), feed.Request{Prefix: "/", Since: page.Oldest})
	if page.Resync || len(page.Changes) != 4 {
		t.Errorf("from the oldest kept: %+v", page)
	}
}
