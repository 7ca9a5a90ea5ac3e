package nats

import "time"

// LocalReads makes s read only what it has applied, never catching up
// with the cluster first, as it does for catchUpPause after a round the
// cluster did not answer: the baseline that BenchmarkMountOpen compares
// close-to-open with.
func LocalReads(s *Store) {
	s.catchUp.mu.Lock()
	defer s.catchUp.mu.Unlock()
	s.catchUp.failedAt = time.Now().Add(24 * time.Hour)
}
