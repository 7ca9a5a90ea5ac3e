package vfs_test

import (
	"bytes"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs"
)

type opCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounts) ObserveOp(op string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[op]++
}

func (c *opCounts) get(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[op]
}

// TestObserver: lookups, opens and reads through the mount reach the
// observer.
func TestObserver(t *testing.T) {
	st, _ := newStore(t, nil)
	obs := &opCounts{n: map[string]int{}}
	m := mount(t, st, &vfs.Options{Observer: obs})
	// Larger than what an open hands to the page cache (a small file's
	// reads send no READ) and smaller than passthrough.
	data := pattern(vfs.PassthroughMinSize-1, 1)
	put(t, st, m, store.PutRequest{Path: "/a/b.txt", Data: data})
	if got := readFile(t, m.path("/a/b.txt")); !bytes.Equal(got, data) {
		t.Fatal("read wrong bytes")
	}
	if _, err := os.ReadDir(m.path("/a")); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"lookup", "open", "read", "opendir"} {
		if obs.get(op) == 0 {
			t.Errorf("no %s observed: %v", op, obs.n)
		}
	}
}

// TestOpenPrimesSmallFiles: the first open of a small file hands its
// content to the kernel's page cache, so reading it sends no READ; an
// update is a new inode and primed with the new content; a larger file is
// read with READ requests as before.
func TestOpenPrimesSmallFiles(t *testing.T) {
	st, _ := newStore(t, nil)
	obs := &opCounts{n: map[string]int{}}
	m := mount(t, st, &vfs.Options{Observer: obs})
	v1, v2, large := pattern(1000, 1), pattern(3000, 2), pattern(vfs.PassthroughMinSize-1, 3)
	put(t, st, m, store.PutRequest{Path: "/small", Data: v1})
	put(t, st, m, store.PutRequest{Path: "/large", Data: large})
	for range 2 {
		if got := readFile(t, m.path("/small")); !bytes.Equal(got, v1) {
			t.Fatal("/small reads wrong bytes")
		}
	}
	put(t, st, m, store.PutRequest{Path: "/small", Data: v2})
	if got := readFile(t, m.path("/small")); !bytes.Equal(got, v2) {
		t.Fatal("/small reads wrong bytes after the update")
	}
	if n := obs.get("read"); n != 0 {
		t.Errorf("%d READ requests for small files, want none", n)
	}
	if got := readFile(t, m.path("/large")); !bytes.Equal(got, large) {
		t.Fatal("/large reads wrong bytes")
	}
	if obs.get("read") == 0 {
		t.Error("reading a file larger than what an open primes sent no READ")
	}
}
