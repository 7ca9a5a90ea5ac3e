package nats

import (
	"testing"
	"time"
)

// LocalReads makes s read only what it has applied, never catching up
// with the cluster first: the baseline that BenchmarkMountOpen compares
// close-to-open with.
func LocalReads(s *Store) {
	s.catchUp.local.Store(true)
}

// HoldWrites takes s's write lock, as a commit in flight does, so that
// the writes called meanwhile queue and commit as one group once release
// is called; queued reports how many are waiting.
func HoldWrites(s *Store) (queued func() int, release func()) {
	s.wlock <- struct{}{}
	return func() int {
		s.qmu.Lock()
		defer s.qmu.Unlock()
		return len(s.queue)
	}, s.unlockWrites
}

// StopFollowing stops s's consumer of the tree bucket, as a consumer
// whose server died would stop delivering; the watchdog reads what it
// misses from the stream's leader and starts it again after a second.
func StopFollowing(s *Store) {
	s.consMu.Lock()
	defer s.consMu.Unlock()
	s.cons.Stop()
}

// AfterRound makes fn run each time a catch-up round of s has the
// stream's last sequence, before the readers waiting on it catch up to
// it. Call it before s reads.
func AfterRound(s *Store, fn func()) {
	s.catchUp.afterRound = fn
}

// SlowApply makes every host of the process wait d before it applies
// each batch of the tree, until the test ends. Only for tests that do
// not run in parallel.
func SlowApply(t testing.TB, d time.Duration) {
	applyPause.Store(int64(d))
	t.Cleanup(func() { applyPause.Store(0) })
}

// PlainAddresses makes a depot that o creates with a key name content by
// its plain hash (a version 1 seal record), as depots sealed before keyed
// addresses do.
func PlainAddresses(o *Options) { o.plainAddresses = true }

// WriteViewCache writes s's view cache now, as a serving host does now
// and then, and returns the stream sequence the file holds.
func WriteViewCache(s *Store) (uint64, error) { return s.writeViewCache() }

// ViewCacheLoaded returns the sequence of the view cache s loaded when it
// opened, 0 when it read the whole tree.
func ViewCacheLoaded(s *Store) uint64 { return s.loadedFrom }

// CPUTime returns the CPU time the test process has used (see cpuTime).
func CPUTime() time.Duration { return cpuTime() }
