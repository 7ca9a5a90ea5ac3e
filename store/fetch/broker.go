package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/depotfs/depotfs/store"
)

// DefaultTimeout is how long a reader waits for content when
// Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// ErrTimeout reports a fetch that no agent answered within the broker's
// timeout. It wraps store.ErrNotPresent, since the content is still missing.
var ErrTimeout = fmt.Errorf("no agent sent the content in time: %w", store.ErrNotPresent)

// ErrClosed reports a Fetch on a closed broker, or one that was still
// waiting when the broker was closed.
var ErrClosed = errors.New("fetch broker is closed")

// Options configure a Broker. The zero value (or a nil *Options) works:
// DefaultTimeout and slog.Default().
type Options struct {
	// Timeout bounds how long one Fetch waits for content to arrive; 0
	// means DefaultTimeout.
	Timeout time.Duration

	// Logger receives a line per request published, answered or timed out;
	// nil means slog.Default().
	Logger *slog.Logger

	// Exchange, when set, shares requests with the brokers of other hosts
	// of the same depot (see Exchange).
	Exchange Exchange
}

// Request is one file whose content readers are waiting for. It is a plain
// value: Broker.Pending returns copies.
type Request struct {
	// ID identifies the request. IDs grow from 1 for the life of a Broker:
	// a request published later always has a greater ID, so an ID works as
	// a cursor for "requests newer than the ones I have seen".
	ID uint64
	// Path is the clean depot path of the file.
	Path string
	// Size, MTime and SHA256 are what the store's entry says the file
	// should be: for a placeholder, its listed size and mtime (Size 0 and
	// the arrival time when the listing gave none); SHA256 "" when unknown.
	Size   int64
	MTime  time.Time
	SHA256 string
	// Since is when the first reader began waiting.
	Since time.Time
	// Waiters counts the readers waiting now.
	Waiters int
}

// Snapshot is the set of pending requests at one moment.
type Snapshot struct {
	// Requests are the pending requests, oldest first.
	Requests []Request
	// LastID is the ID of the newest request ever published (pending or
	// not), 0 before the first.
	LastID uint64
	// Changed is closed at the next change to the set of pending requests
	// (one published, answered or withdrawn; not a change of Waiters).
	Changed <-chan struct{}
}

// Stats counts what a Broker has done since it was created.
type Stats struct {
	Pending   int    // requests open now
	Waiting   int    // readers blocked now
	Requested uint64 // requests published
	Fetched   uint64 // requests answered by the content arriving
	TimedOut  uint64 // reader waits that ended at the timeout
	Abandoned uint64 // reader waits that ended because the reader gave up
	Withdrawn uint64 // requests withdrawn because no reader was left
}

// Broker turns reads of missing content into requests to agents. Its
// methods are safe for concurrent use. It never writes to the store and
// does not own it: Close the Broker before the store.
type Broker struct {
	st      store.Store
	timeout time.Duration
	log     *slog.Logger

	wg sync.WaitGroup // one per request watch goroutine

	mu        sync.Mutex
	reqs      map[string]*request // pending, by path
	lastID    uint64
	changed   chan struct{} // closed and replaced when reqs changes
	listeners map[uint64]func()
	nextLis   uint64
	stats     Stats // counters only; Pending and Waiting are computed
	closed    bool

	// With an Exchange: the other hosts' requests merged by path, and the
	// local IDs given to the paths only they want.
	ex        Exchange
	remote    map[string]Request
	remoteIDs map[string]uint64
	kick      chan struct{} // wakes the publisher after a local change
	stopEx    context.CancelFunc
}

// request is a Request and what its waiters and watch share. Waiters is
// guarded by Broker.mu; err is written before done is closed and read only
// after.
type request struct {
	Request
	done chan struct{} // closed when the request is resolved
	err  error         // why waiters must stop, or nil to retry the open
	stop context.CancelFunc
}

// New returns a Broker over st. A nil opts means the defaults.
func New(st store.Store, opts *Options) *Broker {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	b := &Broker{
		st:        st,
		timeout:   o.Timeout,
		log:       o.Logger,
		reqs:      map[string]*request{},
		changed:   make(chan struct{}),
		listeners: map[uint64]func(){},
		ex:        o.Exchange,
		remote:    map[string]Request{},
		remoteIDs: map[string]uint64{},
		kick:      make(chan struct{}, 1),
		stopEx:    func() {},
	}
	if b.ex != nil {
		ctx, cancel := context.WithCancel(context.Background())
		b.stopEx = cancel
		b.wg.Add(2)
		go b.publisher(ctx)
		go b.follow(ctx)
	}
	return b
}

// Timeout returns how long a Fetch waits for content.
func (b *Broker) Timeout() time.Duration { return b.timeout }

// Fetch returns the content of the file at the clean depot path p. When the
// store holds it, Fetch is store.Open. When the store answers
// store.ErrNotPresent, Fetch joins (or publishes) the request for p and
// waits until the content arrives, then opens it.
//
// Fetch returns an error wrapping ErrTimeout (and so store.ErrNotPresent)
// when no content arrived within the broker's timeout, ctx's error when ctx
// ends first (a reader that gave up), ErrClosed when the broker is closed,
// and the store's error for anything else, such as store.ErrNotExist when
// the entry is removed while readers wait. A request whose last reader
// stops waiting is withdrawn.
func (b *Broker) Fetch(ctx context.Context, p string) (store.Content, error) {
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	start := time.Now()
	for {
		// The revision comes first: the watch of a new request starts
		// there, so content arriving between this Open and the watch is
		// not missed.
		rev, err := b.st.Revision(ctx)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", p, err)
		}
		c, err := b.st.Open(ctx, p)
		if !errors.Is(err, store.ErrNotPresent) {
			return c, err
		}
		e, err := b.st.Stat(ctx, p)
		if err != nil {
			return nil, err
		}
		if e.Present {
			continue // arrived between Open and Stat
		}
		r, err := b.join(e, rev)
		if err != nil {
			return nil, fmt.Errorf("fetch %s: %w", p, err)
		}
		select {
		case <-r.done:
			if r.err != nil {
				return nil, fmt.Errorf("fetch %s: %w", p, r.err)
			}
			b.log.Debug("fetch: content arrived", "path", p, "waited", time.Since(start))
		case <-ctx.Done():
			b.leave(r, &b.stats.Abandoned)
			return nil, fmt.Errorf("fetch %s: %w", p, ctx.Err())
		case <-timer.C:
			left := b.leave(r, &b.stats.TimedOut)
			// The one place that knows a fetch timed out.
			b.log.Warn("fetch: no agent sent the file's content in time; the reader gets an I/O error",
				"path", p, "waited", time.Since(start).Round(time.Millisecond), "timeout", b.timeout,
				"request", r.ID, "readers_still_waiting", left)
			return nil, fmt.Errorf("fetch %s: waited %v: %w", p, b.timeout, ErrTimeout)
		}
	}
}

// join adds a waiter to the pending request for e's path, publishing one
// (and starting its watch from rev) if there is none.
func (b *Broker) join(e store.Entry, rev uint64) (*request, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	if r := b.reqs[e.Path]; r != nil {
		r.Waiters++
		b.mu.Unlock()
		return r, nil
	}
	b.lastID++
	ctx, stop := context.WithCancel(context.Background())
	r := &request{
		Request: Request{
			ID: b.lastID, Path: e.Path, Size: e.Size, MTime: e.MTime, SHA256: e.SHA256,
			Since: time.Now(), Waiters: 1,
		},
		done: make(chan struct{}),
		stop: stop,
	}
	b.reqs[e.Path] = r
	b.stats.Requested++
	b.changedLocked()
	b.wg.Add(1)
	go b.watch(ctx, r, rev)
	b.mu.Unlock()
	b.log.Info("fetch: a reader is waiting for a file's content; asking agents", "path", e.Path, "request", r.ID, "size", e.Size)
	b.notify()
	return r, nil
}

// leave removes one waiter that stopped waiting, counting it in counter,
// and withdraws the request if it was the last. It returns the number of
// readers still waiting.
func (b *Broker) leave(r *request, counter *uint64) int {
	b.mu.Lock()
	*counter++
	r.Waiters--
	left := r.Waiters
	withdraw := left == 0 && b.reqs[r.Path] == r
	if withdraw {
		delete(b.reqs, r.Path)
		b.stats.Withdrawn++
		b.changedLocked()
	}
	b.mu.Unlock()
	if withdraw {
		r.stop()
		b.log.Info("fetch: request withdrawn: no reader is waiting any more", "path", r.Path, "request", r.ID)
		b.notify()
	}
	return left
}

// resolve ends a pending request: its waiters wake, and retry the open when
// err is nil or fail with err. fetched says the content arrived. A request
// already withdrawn or resolved is left alone.
func (b *Broker) resolve(r *request, fetched bool, err error) {
	b.mu.Lock()
	if b.reqs[r.Path] != r {
		b.mu.Unlock()
		return
	}
	delete(b.reqs, r.Path)
	r.err = err
	close(r.done)
	if fetched {
		b.stats.Fetched++
	}
	b.changedLocked()
	b.mu.Unlock()
	r.stop()
	b.notify()
}

// watch follows the store's events for r's path from revision rev and
// resolves r when the content arrives or the entry goes away. It returns
// when r is resolved or withdrawn (which cancels ctx) or the store closes.
func (b *Broker) watch(ctx context.Context, r *request, rev uint64) {
	defer b.wg.Done()
	events, err := b.st.Watch(ctx, r.Path, rev)
	if err != nil {
		b.resolve(r, false, fmt.Errorf("watch: %w", err))
		return
	}
	for ev := range events {
		switch ev.Kind {
		case store.EventResync:
			// Events were lost: look at the entry itself.
			e, err := b.st.Stat(ctx, r.Path)
			switch {
			case errors.Is(err, store.ErrNotExist):
				b.resolve(r, false, nil)
			case err != nil:
				if ctx.Err() == nil {
					b.log.Warn("fetch: checking a file after lost events failed", "path", r.Path, "err", err)
				}
			case e.Present || e.IsDir():
				b.resolve(r, e.Present, nil)
			}
		case store.EventRemoved:
			if ev.Path == r.Path {
				b.resolve(r, false, nil)
			}
		case store.EventCreated, store.EventUpdated:
			if ev.Path == r.Path && ev.Entry.Present {
				b.resolve(r, true, nil)
			}
		}
	}
	if ctx.Err() == nil {
		b.resolve(r, false, fmt.Errorf("store watch ended: %w", store.ErrClosed))
	}
}

// changedLocked signals a change of the pending set. b.mu must be held.
func (b *Broker) changedLocked() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
	close(b.changed)
	b.changed = make(chan struct{})
}

// notify calls every listener, outside the lock.
func (b *Broker) notify() {
	b.mu.Lock()
	fns := make([]func(), 0, len(b.listeners))
	for _, fn := range b.listeners {
		fns = append(fns, fn)
	}
	b.mu.Unlock()
	for _, fn := range fns {
		fn()
	}
}

// Notify registers fn to be called after every change to the set of
// pending requests, until the returned stop function is called. fn runs on
// the goroutine that made the change (a reader's Fetch or a watch), outside
// the Broker's lock: it must return quickly and must not call Fetch; it may
// call Pending and Stats.
func (b *Broker) Notify(fn func()) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextLis++
	id := b.nextLis
	b.listeners[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.listeners, id)
	}
}

// Pending returns the pending requests, oldest first, with a channel that
// is closed at the next change: a long poll waits on it and calls Pending
// again.
func (b *Broker) Pending() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	reqs := make([]Request, 0, len(b.reqs)+len(b.remote))
	for p, r := range b.reqs {
		req := r.Request
		if o, ok := b.remote[p]; ok {
			req.Waiters += o.Waiters
			if o.Since.Before(req.Since) {
				req.Since = o.Since
			}
		}
		reqs = append(reqs, req)
	}
	for p, o := range b.remote {
		if _, ok := b.reqs[p]; !ok {
			o.ID = b.remoteIDs[p]
			reqs = append(reqs, o)
		}
	}
	slices.SortFunc(reqs, func(x, y Request) int { return cmp.Compare(x.ID, y.ID) })
	return Snapshot{Requests: reqs, LastID: b.lastID, Changed: b.changed}
}

// Stats returns the broker's counters and what is pending now.
func (b *Broker) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.Pending = len(b.reqs)
	for _, r := range b.reqs {
		s.Waiting += r.Waiters
	}
	return s
}

// Close withdraws every pending request, releases its waiters with
// ErrClosed and stops the watches; later Fetches of missing content fail
// with ErrClosed (content the store holds is still returned). Close is
// idempotent and always returns nil.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.stopEx()
	reqs := make([]*request, 0, len(b.reqs))
	for p, r := range b.reqs {
		delete(b.reqs, p)
		r.err = ErrClosed
		close(r.done)
		reqs = append(reqs, r)
	}
	b.changedLocked()
	b.mu.Unlock()
	for _, r := range reqs {
		r.stop()
	}
	b.wg.Wait()
	if len(reqs) > 0 {
		b.notify()
	}
	return nil
}
