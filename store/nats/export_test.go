package nats

// LocalReads makes s read only what it has applied, never catching up
// with the cluster first: the baseline that BenchmarkMountOpen compares
// close-to-open with.
func LocalReads(s *Store) {
	s.catchUp.local.Store(true)
}
