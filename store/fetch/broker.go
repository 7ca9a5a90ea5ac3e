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

	"github.com/depotfs/depotfs/internal/depotpath"
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

// request is a Request and what its waiters and watch share. Waiters and
// held are guarded by Broker.mu; err is written before done is closed and
// read only after.
type request struct {
	Request
	done chan struct{} // closed when the request is resolved
	err  error         // why waiters must stop, or nil to retry the open
	stop context.CancelFunc
	// held keeps the request pending with no reader waiting, until the
	// broker's timeout after it was made (hold): it was made for a
	// reader that does not wait (Want), or for a sibling of the file a
	// reader wants.
	held bool
	hold *time.Timer
}

// MaxSiblings bounds the placeholders of one directory asked for together
// when a reader first wants one of them (see Broker.Fetch).
const MaxSiblings = 256

// New returns a Broker over st. A nil opts means the defaults.
func New(st store.Store, opts *Options) *Broker {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	b := &Broker{
		st:        st,
		timeout:   o.Timeout,
		log:       cmp.Or(o.Logger, slog.Default()),
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
		b.wg.Go(func() { b.publisher(ctx) })
		b.wg.Go(func() { b.follow(ctx) })
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
//
// The first request for a file also asks for every other placeholder of
// its directory (up to MaxSiblings), so that a program walking a declared
// tree costs the agents one round trip per directory, not one per file.
// Those requests stay pending for the broker's timeout without a reader
// (they are held), and a reader that opens one of them joins it.
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
		r, err := b.join(e, rev, true)
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

// Want asks for the content of the placeholder at the clean depot path p,
// and for every other placeholder of its directory, as Fetch does, without
// waiting for it: the requests are held for the broker's timeout. It does
// nothing when p's content is present, and fails with the store's error
// when p has no entry.
func (b *Broker) Want(ctx context.Context, p string) error {
	rev, err := b.st.Revision(ctx)
	if err != nil {
		return fmt.Errorf("want %s: %w", p, err)
	}
	e, err := b.st.Stat(ctx, p)
	if err != nil {
		return fmt.Errorf("want %s: %w", p, err)
	}
	if e.Present || e.IsDir() {
		return nil
	}
	if _, err := b.join(e, rev, false); err != nil {
		return fmt.Errorf("want %s: %w", p, err)
	}
	return nil
}

// join adds a waiter (when wait is set) to the pending request for e's
// path, publishing one if there is none: its watch starts from rev, and
// the other placeholders of e's directory are asked for in the same
// change of the pending set (see siblings), so an agent sees them all in
// one reply. A request made without a waiter is held.
func (b *Broker) join(e store.Entry, rev uint64, wait bool) (*request, error) {
	b.mu.Lock()
	r, err := b.joinExistingLocked(e.Path, wait)
	b.mu.Unlock()
	if r != nil || err != nil {
		return r, err
	}
	sibs := b.siblings(e.Path)
	b.mu.Lock()
	if r, err = b.joinExistingLocked(e.Path, wait); r != nil || err != nil {
		b.mu.Unlock()
		return r, err
	}
	r = b.publishLocked(e, rev, wait)
	n := 0
	for _, s := range sibs {
		if n == MaxSiblings {
			break
		}
		if b.reqs[s.Path] == nil {
			b.publishLocked(s, rev, false)
			n++
		}
	}
	b.mu.Unlock()
	b.log.Info("fetch: a reader wants a file's content; asking agents", "path", e.Path, "request", r.ID, "size", e.Size, "waits", wait)
	if n > 0 {
		b.log.Info("fetch: asking agents for the other placeholders of the directory too", "path", e.Path, "placeholders", n)
	}
	b.notify()
	return r, nil
}

// joinExistingLocked adds a waiter to (or renews the hold of) the pending
// request for p, if there is one. b.mu must be held.
func (b *Broker) joinExistingLocked(p string, wait bool) (*request, error) {
	if b.closed {
		return nil, ErrClosed
	}
	r := b.reqs[p]
	if r == nil {
		return nil, nil
	}
	if wait {
		r.Waiters++
	} else {
		b.holdLocked(r)
	}
	return r, nil
}

// publishLocked makes a request for e, with one waiter when wait is set,
// held otherwise, and starts its watch from rev. b.mu must be held.
func (b *Broker) publishLocked(e store.Entry, rev uint64, wait bool) *request {
	b.lastID++
	ctx, stop := context.WithCancel(context.Background())
	r := &request{
		Request: Request{
			ID: b.lastID, Path: e.Path, Size: e.Size, MTime: e.MTime, SHA256: e.SHA256,
			Since: time.Now(),
		},
		done: make(chan struct{}),
		stop: stop,
	}
	if wait {
		r.Waiters = 1
	} else {
		b.holdLocked(r)
	}
	b.reqs[e.Path] = r
	b.stats.Requested++
	b.changedLocked()
	b.wg.Go(func() { b.watch(ctx, r, rev) })
	return r
}

// holdLocked keeps r pending without readers for the broker's timeout from
// now. b.mu must be held.
func (b *Broker) holdLocked(r *request) {
	r.held = true
	if r.hold != nil {
		r.hold.Reset(b.timeout)
		return
	}
	r.hold = time.AfterFunc(b.timeout, func() { b.unhold(r) })
}

// unhold ends r's hold, withdrawing it if no reader waits.
func (b *Broker) unhold(r *request) {
	b.mu.Lock()
	if b.reqs[r.Path] != r {
		b.mu.Unlock()
		return
	}
	r.held = false
	if r.Waiters > 0 {
		b.mu.Unlock()
		return
	}
	b.withdrawLocked(r)
	b.mu.Unlock()
	b.withdrawn(r)
}

// siblings returns the other placeholders of p's directory.
func (b *Broker) siblings(p string) []store.Entry {
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	dir, _ := depotpath.Split(p)
	es, err := b.st.ReadDir(ctx, dir)
	if err != nil {
		return nil // gone since: the reader's own request says what happens
	}
	var sibs []store.Entry
	for _, e := range es {
		if !e.IsDir() && !e.Present && e.Path != p {
			sibs = append(sibs, e)
		}
	}
	return sibs
}

// leave removes one waiter that stopped waiting, counting it in counter,
// and withdraws the request if it was the last and the request is not
// held. It returns the number of readers still waiting.
func (b *Broker) leave(r *request, counter *uint64) int {
	b.mu.Lock()
	*counter++
	r.Waiters--
	left := r.Waiters
	withdraw := left == 0 && !r.held && b.reqs[r.Path] == r
	if withdraw {
		b.withdrawLocked(r)
	}
	b.mu.Unlock()
	if withdraw {
		b.withdrawn(r)
	}
	return left
}

// withdrawLocked removes r from the pending requests. b.mu must be held;
// call withdrawn after releasing it.
func (b *Broker) withdrawLocked(r *request) {
	delete(b.reqs, r.Path)
	b.stats.Withdrawn++
	b.changedLocked()
}

// withdrawn stops a withdrawn request's watch and tells the listeners.
func (b *Broker) withdrawn(r *request) {
	r.stop()
	b.log.Info("fetch: request withdrawn: no reader is waiting any more", "path", r.Path, "request", r.ID)
	b.notify()
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
	if r.hold != nil {
		r.hold.Stop()
	}
	if fetched {
		b.stats.Fetched++
	}
	b.changedLocked()
	b.mu.Unlock()
	r.stop()
	b.notify()
	// The readers go last, so that one holding the content finds the
	// pending set changed and the listeners told.
	r.err = err
	close(r.done)
}

// watch follows the store's events for r's path from revision rev and
// resolves r when the content arrives or the entry goes away. It returns
// when r is resolved or withdrawn (which cancels ctx) or the store closes.
func (b *Broker) watch(ctx context.Context, r *request, rev uint64) {
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
			req = req.with(o)
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
		if r.hold != nil {
			r.hold.Stop()
		}
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
