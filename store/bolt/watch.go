package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/watchhub"
)

// Watch yields the committed changes within prefix with a revision above
// sinceRev, in revision order, until ctx is done or the store is closed;
// then the channel is closed. Each watcher has its own goroutine reading
// the in-memory history (Options.History events); when the events it needs
// are no longer held (after a restart, or when it fell that far behind) it
// receives one store.EventResync with Path prefix and the current revision,
// and continues after it. It is safe for concurrent use.
func (s *Store) Watch(ctx context.Context, prefix string, sinceRev uint64) (<-chan store.Event, error) {
	if err := check.Path("watch", prefix); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, pathErr("watch", prefix, err)
	}
	out := make(chan store.Event, watchhub.Buffer)
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return nil, pathErr("watch", prefix, store.ErrClosed)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.hub.Serve(ctx, s.done, out, prefix, sinceRev)
	}()
	return out, nil
}
