// Package watchhub fans a store's committed events out to its watchers
// (store.Store.Watch): a bounded ring of the last events, and the loop
// each watcher runs over it. Writers never wait for watchers; a watcher
// that needs events the ring no longer holds gets one store.EventResync.
// It knows nothing of how a store commits; the store publishes what it
// committed, in revision order.
package watchhub

import (
	"context"
	"sort"
	"sync"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// Buffer is the capacity a store gives a Watch channel.
const Buffer = 16

// batch bounds the events a watcher copies out of the ring at a time.
const batch = 256

// Hub holds the last events a store published. Its zero value holds
// nothing and must be initialized with Init before use; then it is safe
// for concurrent use.
type Hub struct {
	mu   sync.Mutex
	ring []store.Event // circular; len(ring) is the capacity
	head int           // index of the oldest event
	n    int           // events held
	last uint64        // the store's revision
	from uint64        // the ring holds every event after this revision
	wake chan struct{} // closed and replaced on every publish
}

// Init empties h, makes it hold up to capacity events, and sets the
// store's revision to rev: h holds every event after rev (none yet), so a
// watcher asking for earlier ones is resynced.
func (h *Hub) Init(capacity int, rev uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring = make([]store.Event, capacity)
	h.head, h.n = 0, 0
	h.last, h.from = rev, rev
	h.wake = make(chan struct{})
}

// Publish appends evs, which follow every event published before in
// revision order, moves the store's revision to rev (never back), and
// wakes the watchers.
func (h *Hub) Publish(evs []store.Event, rev uint64) {
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

// Restore makes h hold evs, the changes a store kept durably, in
// revision order, and every change after from: a store fills its hub so
// at open, so watchers and Changes resume across restarts. Past h's
// capacity only the newest events stay, and from moves up accordingly.
func (h *Hub) Restore(from uint64, evs []store.Event) {
	h.mu.Lock()
	h.head, h.n = 0, 0
	h.from = from
	h.mu.Unlock()
	h.Publish(evs, 0)
}

// Changes is store.Store.Changes over the events h holds.
func (h *Hub) Changes(prefix string, after uint64, limit int) store.ChangePage {
	limit = max(limit, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	page := store.ChangePage{Oldest: h.from, Revision: h.last, Next: max(after, h.last)}
	if after < h.from {
		page.Resync, page.Next = true, h.last
		return page
	}
	i := sort.Search(h.n, func(i int) bool { return h.at(i).Revision > after })
	for ; i < h.n; i++ {
		ev := h.at(i)
		if !depotpath.Within(ev.Path, prefix) {
			continue
		}
		if len(page.Events) == limit {
			page.Next = page.Events[limit-1].Revision
			break
		}
		page.Events = append(page.Events, ev)
	}
	return page
}

// Wake wakes everyone waiting on Changed without publishing anything.
func (h *Hub) Wake() { h.Publish(nil, 0) }

// SetFrom says h holds every event after revision from (a store that
// replayed its history without keeping it for watchers).
func (h *Hub) SetFrom(from uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.from = from
}

// Revision is the store's revision as last published.
func (h *Hub) Revision() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

// Changed returns a channel closed at the next Publish or Wake.
func (h *Hub) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wake
}

func (h *Hub) at(i int) store.Event { return h.ring[(h.head+i)%len(h.ring)] }

// read returns up to batch events with revision >= next, or resync when
// h no longer holds all of them; the store's revision; and the channel
// closed by the next publish.
func (h *Hub) read(next uint64) (evs []store.Event, resync bool, cur uint64, wake <-chan struct{}) {
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
	for ; i < h.n && len(evs) < batch; i++ {
		evs = append(evs, h.at(i))
	}
	return evs, false, cur, wake
}

// Watch is store.Store.Watch over h: a watcher of prefix from sinceRev,
// served (Serve, until ctx ends or done is closed) on a goroutine the
// store starts with start, which fails once ctx is done or the store
// closed.
func (h *Hub) Watch(ctx context.Context, done <-chan struct{}, prefix string, sinceRev uint64, start func(context.Context, func()) error) (<-chan store.Event, error) {
	if err := check.Path("watch", prefix); err != nil {
		return nil, err
	}
	out := make(chan store.Event, Buffer)
	if err := start(ctx, func() { h.Serve(ctx, done, out, prefix, sinceRev) }); err != nil {
		return nil, check.PathError("watch", prefix, err)
	}
	return out, nil
}

// Serve sends out the events within prefix with a revision above since,
// in revision order, as they are published; when the events it needs are
// no longer held it sends one store.EventResync with Path prefix and the
// store's revision, and continues after it. It returns, closing out, when
// ctx is done or done is closed. Each watcher runs its own Serve.
func (h *Hub) Serve(ctx context.Context, done <-chan struct{}, out chan<- store.Event, prefix string, since uint64) {
	defer close(out)
	send := func(ev store.Event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
		case <-done:
		}
		return false
	}
	next := since + 1
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
			case <-done:
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
