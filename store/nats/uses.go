package nats

import (
	"sync"
	"sync/atomic"
)

// uses tracks, in this host's memory, the last use of each content (for
// the LRU order of eviction) and the hit and miss counts. A use is a
// number from one host-wide sequence: writes as this host applies them
// (every host sees every write, in revision order), and this host's own
// reads. Reads on other hosts do not move content up in this host's
// order: eviction is least recently used as seen by the evicting host.
type uses struct {
	mu   sync.Mutex
	seq  uint64
	last map[string]uint64

	hits, misses atomic.Int64
}

func (u *uses) init() { u.last = make(map[string]uint64) }

// touch records a use of each content.
func (u *uses) touch(sums ...string) {
	if len(sums) == 0 {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, s := range sums {
		u.seq++
		u.last[s] = u.seq
	}
}

// orders returns the use sequence and the last use of each of sums (0
// for never), for the view cache.
func (u *uses) orders(sums []string) (uint64, []uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]uint64, len(sums))
	for i, s := range sums {
		out[i] = u.last[s]
	}
	return u.seq, out
}

// restore sets the last uses and the sequence a view cache held, before
// any use.
func (u *uses) restore(last map[string]uint64, seq uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.last, u.seq = last, seq
}

// order returns the last use of sum, 0 for never.
func (u *uses) order(sum string) uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last[sum]
}

// openBlobs counts this host's open Contents per content, so the sweeper
// never deletes chunks a local reader still needs.
type openBlobs struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *openBlobs) add(sum string, d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n[sum] += d
	if o.n[sum] <= 0 {
		delete(o.n, sum)
	}
}

func (o *openBlobs) has(sum string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.n[sum] > 0
}
