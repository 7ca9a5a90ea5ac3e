package bolt_test

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func TestDedup(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 1000})
	data := bytes.Repeat([]byte{7}, 3500)
	mustPut(t, s, "/a", data)
	mustPut(t, s, "/b/c", data)
	if st := stats(t, s); st.Blobs != 1 || st.Chunks != 4 {
		t.Errorf("two copies: %+v, want 1 blob of 4 chunks", st)
	}
	mustPut(t, s, "/a", []byte("other"))
	if st := stats(t, s); st.Blobs != 2 || st.Chunks != 5 {
		t.Errorf("after replacing one copy: %+v, want 2 blobs, 5 chunks", st)
	}
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/b/c", Kind: store.KindFile, Size: 1}}}); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, s); st.Blobs != 1 || st.Chunks != 1 {
		t.Errorf("after a stale declaration dropped the last copy: %+v, want 1 blob, 1 chunk", st)
	}
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/a"}); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, s); st != (bolt.Stats{}) {
		t.Errorf("after removing everything: %+v, want nothing", st)
	}
}

func TestContentPinsBlob(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 10})
	data := []byte("pinned content, several chunks long")
	mustPut(t, s, "/f", data)
	c1, err := s.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := s.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/f"}); err != nil {
		t.Fatal(err)
	}
	if st := stats(t, s); st.Blobs != 1 || st.Orphans != 1 {
		t.Errorf("removed while open: %+v, want the blob kept as an orphan", st)
	}
	c1.Close()
	if st := stats(t, s); st.Blobs != 1 {
		t.Errorf("one of two Contents closed: %+v, want the blob kept", st)
	}
	got, err := io.ReadAll(io.NewSectionReader(c2, 0, c2.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("reading the remaining Content: %q, %v", got, err)
	}
	c2.Close()
	if st := stats(t, s); st != (bolt.Stats{}) {
		t.Errorf("after the last Close: %+v, want nothing", st)
	}
}

func TestContentReferencedAgain(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, nil)
	mustPut(t, s, "/f", []byte("again"))
	c, err := s.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/f"}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, "/g", []byte("again"))
	c.Close()
	if st := stats(t, s); st.Blobs != 1 || st.Orphans != 0 {
		t.Errorf("%+v, want the blob referenced by /g and no orphan", st)
	}
	if got := readAll(t, s, "/g"); string(got) != "again" {
		t.Errorf("read %q", got)
	}
}

// TestOrphanSweptOnOpen: a store closed (or killed) while a Content held
// an unreferenced blob leaves an orphan, which the next Open deletes.
func TestOrphanSweptOnOpen(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, nil)
	mustPut(t, s, "/f", []byte("orphan"))
	c, err := s.Open(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/f"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadAt(make([]byte, 1), 0); err == nil {
		t.Error("ReadAt after the store closed succeeded")
	}
	c.Close()
	s = openAt(t, path, nil)
	if st := stats(t, s); st != (bolt.Stats{}) {
		t.Errorf("after reopen: %+v, want the orphan swept", st)
	}
}
