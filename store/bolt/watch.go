package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
)

// Watch yields the committed changes within prefix with a revision above
// sinceRev, in revision order, until ctx is done or the store is closed;
// then the channel is closed. Each watcher has its own goroutine reading
// the in-memory history (Options.History events); when the events it needs
// are no longer held (after a restart, or when it fell that far behind) it
// receives one store.EventResync with Path prefix and the current revision,
// and continues after it. It is safe for concurrent use.
func (s *Store) Watch(ctx context.Context, prefix string, sinceRev uint64) (<-chan store.Event, error) {
	return s.hub.Watch(ctx, s.done, prefix, sinceRev, s.start)
}

// start runs fn on a goroutine Close waits for, unless ctx is done or the
// store closed.
func (s *Store) start(ctx context.Context, fn func()) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return store.ErrClosed
	}
	s.wg.Go(fn)
	return nil
}
