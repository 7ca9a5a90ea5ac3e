package vfs_test

import (
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
	put(t, st, m, store.PutRequest{Path: "/a/b.txt", Data: []byte("hello")})
	if got := readFile(t, m.path("/a/b.txt")); string(got) != "hello" {
		t.Fatalf("read %q", got)
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
