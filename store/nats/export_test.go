package nats

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
