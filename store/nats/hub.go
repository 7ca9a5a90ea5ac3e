package nats

import (
	"context"
	"sort"
	"sync"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// watchBatch bounds the events a watcher copies per wake-up.
const watchBatch = 256

// watchBuffer is the capacity of a Watch channel.
const watchBuffer = 16

// hub holds the last events this host applied, in revision order, for
// Watch. Writers (the view) never wait for watchers: a watcher that falls
// behind the ring gets a resync.
type hub struct {
	mu   sync.Mutex
	ring []store.Event // circular; len(ring) is the capacity
	head int           // index of the oldest event
	n    int           // events held
	last uint64        // the store's revision: the last entry change applied
	from uint64        // the ring holds every event after this revision
	wake chan struct{} // closed and replaced on every publish
	done chan struct{} // closed by Close
}

// init starts an empty ring.
func (h *hub) init(capacity int, done chan struct{}) {
	h.ring = make([]store.Event, capacity)
	h.wake = make(chan struct{})
	h.done = done
}

// publish appends evs and moves the revision to rev.
func (h *hub) publish(evs []store.Event, rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range evs {
		if h.n < len(h.ring) {
			h.ring[(h.head+h.n)%len(h.ring)] = ev
			h.n++
		} else {
			h.from = max(h.from, h.ring[h.head].Revision)
			h.ring[h.head] = ev
			h.head = (h.head + 1) % len(h.ring)
		}
	}
	h.last = max(h.last, rev)
	close(h.wake)
	h.wake = make(chan struct{})
}

// setFrom says the ring holds every event after revision from.
func (h *hub) setFrom(from uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.from = from
}

// wakeAll wakes every waiter without a change.
func (h *hub) wakeAll() { h.publish(nil, 0) }

// waiter returns a channel closed at the next publish, and the store's
// done channel.
func (h *hub) waiter() (<-chan struct{}, <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake, h.done
}

func (h *hub) at(i int) store.Event { return h.ring[(h.head+i)%len(h.ring)] }

// read returns up to watchBatch events from revision next on; resync when
// the ring no longer holds all of them.
func (h *hub) read(next uint64) (evs []store.Event, resync bool, cur uint64, wake <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	cur, wake = h.last, h.wake
	if next > cur {
		return nil, false, cur, wake
	}
	if next <= h.from {
		return nil, true, cur, wake
	}
	i := sort.Search(h.n, func(i int) bool { return h.at(i).Revision >= next })
	for ; i < h.n && len(evs) < watchBatch; i++ {
		evs = append(evs, h.at(i))
	}
	return evs, false, cur, wake
}

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
	out := make(chan store.Event, watchBuffer)
	s.goMu.Lock()
	defer s.goMu.Unlock()
	if s.closed.Load() {
		return nil, check.PathError("watch", prefix, store.ErrClosed)
	}
	s.wg.Add(1)
	go s.watch(ctx, out, prefix, sinceRev+1)
	return out, nil
}

func (s *Store) watch(ctx context.Context, out chan<- store.Event, prefix string, next uint64) {
	defer s.wg.Done()
	defer close(out)
	h := &s.view.hub
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
		evs, resync, cur, wake := h.read(next)
		if resync {
			if !send(store.Event{Kind: store.EventResync, Path: prefix, Revision: cur}) {
				return
			}
			next = cur + 1
			continue
		}
		if len(evs) == 0 {
			next = max(next, cur+1)
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
