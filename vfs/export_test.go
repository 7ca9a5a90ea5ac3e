package vfs

// SetMinPruneAt sets the smallest size at which a mount mounted after it
// prunes the paths it remembers cached blobs for, and returns a function
// that restores it.
func SetMinPruneAt(n int) (restore func()) {
	old := minPruneAt
	minPruneAt = n
	return func() { minPruneAt = old }
}

// BlobPaths returns how many paths m remembers a cached blob for (0
// without passthrough).
func BlobPaths(m *Server) int {
	pt := m.inv.fsys.pt.Load()
	if pt == nil {
		return 0
	}
	return pt.paths()
}
