package bolt_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestCopySharesContent checks that copies and moves reference the
// source's blob instead of writing chunks, and that the blob goes with the
// last entry using it.
func TestCopySharesContent(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 1000})
	data := bytes.Repeat([]byte("0123456789"), 350)
	mustPut(t, s, "/d/a", data)
	mustPut(t, s, "/d/b", []byte("b"))
	want := bolt.Stats{Blobs: 2, Chunks: 5}
	if st := stats(t, s); st != want {
		t.Fatalf("before: %+v, want %+v", st, want)
	}
	steps := []struct {
		name string
		do   func() error
	}{
		{"copy file", func() error {
			_, err := s.Copy(ctx, store.CopyRequest{From: "/d/a", To: "/c/a"})
			return err
		}},
		{"copy tree", func() error {
			_, err := s.Copy(ctx, store.CopyRequest{From: "/d", To: "/e"})
			return err
		}},
		{"move tree", func() error {
			_, err := s.Move(ctx, store.MoveRequest{From: "/e", To: "/f/g"})
			return err
		}},
		{"copy over a file", func() error {
			_, err := s.Copy(ctx, store.CopyRequest{From: "/d/b", To: "/c/a"})
			return err
		}},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if st := stats(t, s); st != want {
			t.Errorf("after %s: %+v, want %+v (no new content)", step.name, st, want)
		}
		if err := bolt.Verify(s); err != nil {
			t.Fatalf("after %s: %v", step.name, err)
		}
	}
	for _, p := range []string{"/d", "/c", "/f"} {
		if err := s.Remove(ctx, store.RemoveRequest{Path: p, Recursive: true}); err != nil {
			t.Fatal(err)
		}
	}
	if st := stats(t, s); st != (bolt.Stats{}) {
		t.Errorf("after removing every copy: %+v, want nothing", st)
	}
}

// TestCopyLargeFileWritesNoContent copies an 8 MiB file three times and
// checks that the database file grew by less than 1 MiB: a copy of the
// content would grow it by 8 MiB at least (32 MiB showed the same).
func TestCopyLargeFileWritesNoContent(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, nil)
	data := bytes.Repeat([]byte{0xa5}, 8<<20)
	mustPut(t, s, "/big", data)
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	for i, p := range []string{"/copy1", "/copy2", "/copy3"} {
		res, err := s.Copy(ctx, store.CopyRequest{From: "/big", To: p})
		if err != nil {
			t.Fatal(err)
		}
		if res.Bytes != int64(len(data)) {
			t.Errorf("copy %d: Bytes %d, want %d", i, res.Bytes, len(data))
		}
	}
	if _, err := s.Move(ctx, store.MoveRequest{From: "/copy3", To: "/moved/big"}); err != nil {
		t.Fatal(err)
	}
	if grown := size() - before; grown > 1<<20 {
		t.Errorf("three copies and a move of 8 MiB grew the database by %d bytes", grown)
	}
	if got := readAll(t, s, "/moved/big"); !bytes.Equal(got, data) {
		t.Error("moved copy differs from the source")
	}
}

// TestMovePersists checks a moved tree after the store is reopened.
func TestMovePersists(t *testing.T) {
	ctx := context.Background()
	s, path := openTemp(t, nil)
	mustPut(t, s, "/a/b/c", []byte("deep"))
	mustPut(t, s, "/a/d", []byte("shallow"))
	if _, err := s.Move(ctx, store.MoveRequest{From: "/a", To: "/z"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, nil)
	if got := readAll(t, s, "/z/b/c"); string(got) != "deep" {
		t.Errorf("/z/b/c reads %q", got)
	}
	if _, err := s.Stat(ctx, "/a"); err == nil {
		t.Error("/a survived the move and a reopen")
	}
}
