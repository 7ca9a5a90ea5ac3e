package bolt_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

func mustPut(t testing.TB, s store.Store, p string, data []byte) store.PutResult {
	t.Helper()
	res, err := s.Put(context.Background(), store.PutRequest{Path: p, Data: data})
	if err != nil {
		t.Fatalf("Put(%s): %v", p, err)
	}
	return res
}

func readAll(t testing.TB, s store.Store, p string) []byte {
	t.Helper()
	c, err := s.Open(context.Background(), p)
	if err != nil {
		t.Fatalf("Open(%s): %v", p, err)
	}
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPersistence(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, &bolt.Options{ChunkSize: 100})
	data := bytes.Repeat([]byte("persist "), 100)
	mustPut(t, s, "/a/b/f", data)
	mustPut(t, s, "/a/g", []byte("g"))
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/listed/p", Kind: store.KindFile, Size: 7, SHA256: storetest.Sum([]byte("listed!"))},
		{Path: "/empty", Kind: store.KindDir},
	}}); err != nil {
		t.Fatal(err)
	}
	upData := bytes.Repeat([]byte("upload "), 50)
	file := store.PutRequest{Path: "/up/f", SHA256: storetest.Sum(upData), Writer: "w"}
	parts := [][]byte{upData[:100], upData[100:200], upData[200:]}
	for _, i := range []int{2, 0} {
		if _, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: i, Count: 3, Data: parts[i], File: file}); err != nil {
			t.Fatal(err)
		}
	}
	var before []store.Entry
	// "/" and the directories carry the times of their last created
	// child (package storetest checks how they move).
	for _, p := range []string{"/", "/a", "/a/b", "/a/b/f", "/a/g", "/listed", "/listed/p", "/empty"} {
		e, err := s.Stat(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		before = append(before, e)
	}
	rev, _ := s.Revision(ctx)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened with another chunk size: old blobs keep theirs.
	s = openAt(t, path, &bolt.Options{ChunkSize: 64})
	if got, _ := s.Revision(ctx); got != rev {
		t.Errorf("revision %d after reopen, was %d", got, rev)
	}
	maxIno := uint64(0)
	for _, want := range before {
		got, err := s.Stat(ctx, want.Path)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("after reopen %+v\nwas %+v", got, want)
		}
		if got.IsDir() && got.MTime.IsZero() {
			t.Errorf("%s has no mtime", got.Path)
		}
		maxIno = max(maxIno, got.Ino)
	}
	if !bytes.Equal(readAll(t, s, "/a/b/f"), data) {
		t.Error("content reads wrong after reopen")
	}
	prog, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: 1, Count: 3, Data: parts[1], File: file})
	if err != nil {
		t.Fatal(err)
	}
	if !prog.Complete || prog.Received != 3 {
		t.Fatalf("upload after reopen: %+v", prog)
	}
	if !bytes.Equal(readAll(t, s, "/up/f"), upData) {
		t.Error("upload finished after reopen reads wrong")
	}
	if e, _ := s.Stat(ctx, "/up/f"); e.Ino <= maxIno || e.Revision <= rev {
		t.Errorf("new entry after reopen %+v: inode and revision must be new (above %d, %d)", e, maxIno, rev)
	}
}

// TestRestartResumes: a watch from before a restart resumes from the
// change log; one from before what the log keeps is told to resync.
func TestRestartResumes(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, &bolt.Options{History: 2})
	mustPut(t, s, "/x/f", []byte("1"))
	mustPut(t, s, "/x/f", []byte("2"))
	rev, _ := s.Revision(ctx)
	s.Close()
	s = openAt(t, path, &bolt.Options{History: 2})

	ch, err := s.Watch(t.Context(), "/x", rev-1)
	if err != nil {
		t.Fatal(err)
	}
	if ev := storetest.NextEvent(t, ch); ev.Kind != store.EventUpdated || ev.Path != "/x/f" || ev.Revision != rev {
		t.Errorf("after restart, watching from %d: %+v; want the update of /x/f at %d", rev-1, ev, rev)
	}
	// Older than the 2 changes kept (revisions rev-1 and rev): resync.
	ch, err = s.Watch(t.Context(), "/x", rev-3)
	if err != nil {
		t.Fatal(err)
	}
	if ev := storetest.NextEvent(t, ch); ev.Kind != store.EventResync || ev.Path != "/x" || ev.Revision != rev {
		t.Errorf("after restart, watching from %d: %+v; want a resync of /x at %d", rev-3, ev, rev)
	}
	mustPut(t, s, "/x/f", []byte("3"))
	if ev := storetest.NextEvent(t, ch); ev.Kind != store.EventUpdated || ev.Revision != rev+1 {
		t.Errorf("after the resync: %+v", ev)
	}
	// Watching from the current revision needs no history.
	ch2, err := s.Watch(t.Context(), "/", rev+1)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "/y", []byte("y"))
	if ev := storetest.NextEvent(t, ch2); ev.Kind != store.EventCreated || ev.Path != "/y" {
		t.Errorf("watching from the current revision: %+v", ev)
	}
}

func TestMTimeArrival(t *testing.T) {
	clk := newClock()
	s, _ := openTemp(t, &bolt.Options{Now: clk.Now})
	first := mustPut(t, s, "/f", []byte("1")).Entry
	if !first.MTime.Equal(clk.Now()) || !first.Created.Equal(clk.Now()) || !first.Updated.Equal(clk.Now()) {
		t.Errorf("entry %+v, want the clock's %v", first, clk.Now())
	}
	clk.Advance(time.Hour)
	if e := mustPut(t, s, "/f", []byte("1")).Entry; !e.MTime.Equal(first.MTime) {
		t.Errorf("unchanged content moved the mtime to %v", e.MTime)
	}
	e := mustPut(t, s, "/f", []byte("2")).Entry
	if !e.MTime.Equal(clk.Now()) || !e.Updated.Equal(clk.Now()) || !e.Created.Equal(first.Created) {
		t.Errorf("updated entry %+v, want mtime and updated %v", e, clk.Now())
	}
}
