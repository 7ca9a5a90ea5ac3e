package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
)

// Stats returns the store's counts, sizes, cumulative counters and limits.
// It is safe for concurrent use.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx); err != nil {
		return store.Stats{}, err
	}
	return store.Stats{MaxStoreBytes: s.opts.MaxStoreBytes, MaxFileBytes: s.opts.MaxFileBytes}, nil
}
