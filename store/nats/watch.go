package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/watchhub"
)

// Watch yields the changes after sinceRev to paths within prefix, as this
// host applies them (see store.Store.Watch). The history is this host's,
// in memory: a watcher asking for revisions from before the store was
// opened, or that fell more than Options.History events behind, receives
// store.EventResync. It is safe for concurrent use.
func (s *Store) Watch(ctx context.Context, prefix string, sinceRev uint64) (<-chan store.Event, error) {
	if err := check.Path("watch", prefix); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, check.PathError("watch", prefix, err)
	}
	out := make(chan store.Event, watchhub.Buffer)
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return nil, check.PathError("watch", prefix, store.ErrClosed)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.view.hub.Serve(ctx, s.done, out, prefix, sinceRev)
	}()
	return out, nil
}
