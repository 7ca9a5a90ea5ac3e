package bolt_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestCompact: after writes and removals, Compact shrinks the file, keeps
// every live file, and refuses a database that is open.
func TestCompact(t *testing.T) {
	s, path := openTemp(t, nil)
	ctx := context.Background()
	for i := range 8 {
		data := make([]byte, 512<<10)
		data[0] = byte(i)
		if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i), Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		if err := s.Remove(ctx, store.RemoveRequest{Path: fmt.Sprintf("/f%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bolt.Compact(path); !errors.Is(err, bolt.ErrLocked) {
		t.Errorf("Compact of an open database: %v, want ErrLocked", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := bolt.Compact(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if res.After >= res.Before || fi.Size() != res.After || res.After > 2<<20 {
		t.Errorf("Compact: %+v, file now %d bytes; want it shrunk to about the 1 MiB live", res, fi.Size())
	}
	if _, err := os.Stat(path + ".compact"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary copy is left behind: %v", err)
	}
	s2, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for i := 6; i < 8; i++ {
		c, err := s2.Open(ctx, fmt.Sprintf("/f%d", i))
		if err != nil {
			t.Fatalf("/f%d after Compact: %v", i, err)
		}
		b := make([]byte, 1)
		if _, err := c.ReadAt(b, 0); err != nil || b[0] != byte(i) {
			t.Errorf("/f%d after Compact: %v %v", i, b, err)
		}
		c.Close()
	}
	if _, err := s2.Put(ctx, store.PutRequest{Path: "/after", Data: make([]byte, 3<<20)}); err != nil {
		t.Errorf("a write that grows the compacted file: %v", err)
	}
}

func TestPing(t *testing.T) {
	s, _ := openTemp(t, nil)
	rev, _ := s.Revision(context.Background())
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if after, _ := s.Revision(context.Background()); after != rev {
		t.Errorf("Ping moved the revision from %d to %d", rev, after)
	}
	s.Close()
	if err := s.Ping(context.Background()); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Ping of a closed store: %v, want ErrClosed", err)
	}
}

// TestWritable: Writable answers without writing (the file's mtime and
// size stay), and fails once the store is closed.
func TestWritable(t *testing.T) {
	s, path := openTemp(t, nil)
	ctx := context.Background()
	if _, err := s.Put(ctx, store.PutRequest{Path: "/a", Data: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if err := s.Writable(ctx); err != nil {
			t.Fatalf("Writable: %v", err)
		}
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("Writable changed the file: mtime %v -> %v, size %d -> %d", before.ModTime(), after.ModTime(), before.Size(), after.Size())
	}
	s.Close()
	if err := s.Writable(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Writable of a closed store: %v, want ErrClosed", err)
	}
}
