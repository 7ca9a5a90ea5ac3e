package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
)

// Watch yields the changes after sinceRev to paths within prefix, as this
// host applies them (see store.Store.Watch). The history is this host's,
// in memory: a watcher asking for revisions from before the store was
// opened, or that fell more than Options.History events behind, receives
// store.EventResync. It is safe for concurrent use.
func (s *Store) Watch(ctx context.Context, prefix string, sinceRev uint64) (<-chan store.Event, error) {
	return s.view.hub.Watch(ctx, s.done, prefix, sinceRev, s.start)
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
