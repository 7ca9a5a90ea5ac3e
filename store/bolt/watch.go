package bolt

import (
	"context"
	"sort"
	"sync"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// watchBatch bounds how many events a watcher copies out of the history at
// a time.
const watchBatch = 256

// watchBuffer is the capacity of a Watch channel.
const watchBuffer = 16

// hub keeps the last committed events in a ring and wakes watchers when
// more arrive. Writers append and never wait for watchers; each watcher
// reads the ring at its own pace.
type hub struct {
	mu   sync.Mutex
	ring []store.Event // circular; len(ring) is the capacity
	head int           // index of the oldest event
	n    int           // events held
	last uint64        // revision of the last committed change
	wake chan struct{} // closed and replaced on every publish
}

func (h *hub) init(capacity int, rev uint64) {
	h.ring = make([]store.Event, capacity)
	h.last = rev
	h.wake = make(chan struct{})
}

func (h *hub) current() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// publish appends committed events, in revision order.
func (h *hub) publish(evs []store.Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if h.n < len(h.ring) {
			h.ring[(h.head+h.n)%len(h.ring)] = ev
			h.n++
		} else {
			h.ring[h.head] = ev
			h.head = (h.head + 1) % len(h.ring)
		}
	}
	h.last = evs[len(evs)-1].Revision
	close(h.wake)
	h.wake = make(chan struct{})
}

func (h *hub) at(i int) store.Event { return h.ring[(h.head+i)%len(h.ring)] }

// read returns up to watchBatch events with revision >= next, or resync
// when events from next on are no longer held; and the channel closed by
// the next publish.
func (h *hub) read(next uint64) (evs []store.Event, resync bool, cur uint64, wake <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, wake = h.last, h.wake
	if next > cur {
		return nil, false, cur, wake
	}
	if h.n == 0 || h.at(0).Revision > next {
		return nil, true, cur, wake
	}
	i := sort.Search(h.n, func(i int) bool { return h.at(i).Revision >= next })
	for ; i < h.n && len(evs) < watchBatch; i++ {
		evs = append(evs, h.at(i))
	}
	return evs, false, cur, wake
}

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
	out := make(chan store.Event, watchBuffer)
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return nil, pathErr("watch", prefix, store.ErrClosed)
	}
	s.wg.Add(1)
	go s.watch(ctx, out, prefix, sinceRev+1)
	return out, nil
}

func (s *Store) watch(ctx context.Context, out chan<- store.Event, prefix string, next uint64) {
	defer s.wg.Done()
	defer close(out)
	send := func(ev store.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
		case <-s.done:
		}
		return false
	}
	for {
		evs, resync, cur, wake := s.hub.read(next)
		if resync {
			if !send(store.Event{Kind: store.EventResync, Path: prefix, Revision: cur}) {
				return
			}
			next = cur + 1
			continue
		}
		if len(evs) == 0 {
			select {
			case <-wake:
				continue
			case <-ctx.Done():
			case <-s.done:
			}
			return
		}
		for _, ev := range evs {
			if depotpath.Within(ev.Path, prefix) && !send(ev) {
				return
			}
			next = ev.Revision + 1
		}
	}
}
