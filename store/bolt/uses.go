package bolt

import (
	"sync"
	"sync/atomic"
)

// uses tracks, in memory, what reads do to the store: the last use of each
// blob (for the LRU order), and the hit and miss counts. A use is a number
// from one store-wide sequence rather than a time, so the order is exact
// and does not depend on the clock. Reads only touch memory; the next write
// transaction, the sweeper (every Options.FlushInterval) and Close persist
// what accumulated, so after a crash the order and the counts are those of
// a few seconds earlier.
type uses struct {
	mu    sync.Mutex
	seq   uint64          // the last use number handed out
	dirty map[hash]uint64 // blobs read since the last flush → their last use
	moved bool            // hits or misses counted since the last flush

	// perFlush is how many uses a transaction persists (usesPerFlush
	// unless a test chose fewer), and 16 × perFlush how many wait at
	// most; set by init.
	perFlush int

	// hits and misses are totals since the store was created: loaded at
	// Open, persisted as they are at each flush.
	hits, misses atomic.Int64
}

func (u *uses) init(c counters, perFlush int) {
	u.perFlush = perFlush
	u.seq = uint64(c.UseSeq)
	u.dirty = make(map[hash]uint64)
	u.hits.Store(c.Hits)
	u.misses.Store(c.Misses)
}

// next hands out a use number.
func (u *uses) next() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seq++
	return u.seq
}

// The uses held in memory are bounded. Persisting a use rewrites the
// blob's record and its lru key, which lie on pages spread over the file
// (blobs are keyed by hash), and bbolt holds every page a transaction
// changed in memory until it commits: a flush of the uses of a walk that
// read 100,000 files changed about as many pages, hundreds of MB, and the
// map itself grew by a slot per file read until the next flush. So a
// transaction persists at most usesPerFlush uses, the sweeper persists
// them once that many wait (without waiting for FlushInterval), and
// beyond maxDirtyUses waiting (reads faster than the sweeper's round) a
// read of a blob not already waiting is counted but its use not recorded:
// the LRU order then misses some of the last second's reads, which is
// what it would miss after a crash too.
const (
	usesPerFlush = 4096
	maxDirtyUses = 16 * usesPerFlush
)

// maxDirty is how many uses wait at most: maxDirtyUses by default.
func (u *uses) maxDirty() int { return u.perFlush * (maxDirtyUses / usesPerFlush) }

// hit records an Open of blob h (a present file).
func (u *uses) hit(h hash) {
	u.mu.Lock()
	if _, ok := u.dirty[h]; ok || len(u.dirty) < u.maxDirty() {
		u.seq++
		u.dirty[h] = u.seq
	}
	u.moved = true
	u.mu.Unlock()
	u.hits.Add(1)
}

// waiting is how many uses wait to be persisted.
func (u *uses) waiting() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.dirty)
}

// miss records an Open of a placeholder.
func (u *uses) miss() {
	u.mu.Lock()
	u.moved = true
	u.mu.Unlock()
	u.misses.Add(1)
}

// pending reports whether reads happened since the last flush.
func (u *uses) pending() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.moved
}

// last returns the last use number handed out.
func (u *uses) last() uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seq
}

// take returns up to perFlush of the blobs read since the last flush
// and forgets them; a failed flush gives them back.
func (u *uses) take() map[hash]uint64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.moved = false
	if len(u.dirty) == 0 {
		return nil
	}
	if len(u.dirty) <= u.perFlush {
		d := u.dirty
		u.dirty = make(map[hash]uint64)
		return d
	}
	d := make(map[hash]uint64, u.perFlush)
	for h, seq := range u.dirty {
		if len(d) == u.perFlush {
			break
		}
		d[h] = seq
		delete(u.dirty, h)
	}
	u.moved = true // the rest still waits
	return d
}

// giveBack merges uses taken by a flush that did not commit.
func (u *uses) giveBack(d map[hash]uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.moved = true
	for h, seq := range d {
		if seq > u.dirty[h] {
			u.dirty[h] = seq
		}
	}
}

// flush writes the uses taken from u into w's blob records.
func (w *wtx) flush(d map[hash]uint64) error {
	for h, seq := range d {
		if err := w.used(h, seq); err != nil {
			return err
		}
	}
	return nil
}

// syncUseCounts copies the in-memory counts into w's counters, last thing before
// the commit: the use sequence (which w's own writes advanced), hits and
// misses.
func (w *wtx) syncUseCounts() {
	w.c.UseSeq = max(w.c.UseSeq, int64(w.s.uses.last()))
	w.c.Hits = max(w.c.Hits, w.s.uses.hits.Load())
	w.c.Misses = max(w.c.Misses, w.s.uses.misses.Load())
}
