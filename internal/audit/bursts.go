package audit

import (
	"cmp"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultBurstWindow is how long refused calls of one kind from one
// identity count as one burst.
const DefaultBurstWindow = 10 * time.Second

// BurstFirst is how many refusals of a burst are written at once, each
// its own record with its request id: a caller's occasional refusals are
// not grouped, a flood is.
const BurstFirst = 5

// Bounds of what a Bursts remembers at once: refusals beyond them share
// one burst per identity (maxIdentityBursts) or in all (maxBursts), so a
// caller that makes every refusal different (made-up tool names) still
// writes a bounded number of records: at most
// (maxIdentityBursts+1)*(BurstFirst+1) per window.
const (
	maxIdentityBursts = 8
	maxBursts         = 4096
)

// Keys of the bursts beyond the bounds above.
const (
	otherReasons    = "\x00other reasons"
	otherIdentities = "\x00other identities"
)

// Appender is where Bursts writes: *Log is one. Append and Err are called
// from many goroutines at once.
type Appender interface {
	// Append writes one record durably, setting its Seq, Prev and Hash.
	Append(r *Record) error
	// AppendDeferred writes one record in order, as Append does, and
	// returns before it is durable (Log.AppendDeferred).
	AppendDeferred(r *Record) error
	// Err reports a failure of the log that makes it refuse records, or
	// nil.
	Err() error
}

// EarlyAppender is an Appender that can also write a record while the
// change it describes commits (Log.AppendEarly); *Log is one, and so is
// Bursts when what it writes to is.
type EarlyAppender interface {
	Appender
	// AppendEarly writes r before its change is durable; the caller
	// settles it with Confirm or Amend.
	AppendEarly(r *Record) error
	// Committed lets the checkpoint pass early, whose change is durable,
	// without waiting.
	Committed(early *Record)
	// Confirm returns once early, whose change is durable, is durable and
	// checkpointed; r, the call's record as of its end, is not written.
	Confirm(early, r *Record) error
	// Amend writes r, the outcome of early's call whose change did not
	// become durable, and returns once r is durable and checkpointed.
	Amend(early, r *Record) error
}

// ErrNoEarly is AppendEarly's error when the log behind a Bursts cannot
// write early records: the caller writes its record after the change, with
// Append.
var ErrNoEarly = errors.New("audit: early records not supported")

var (
	_ EarlyAppender = (*Log)(nil)
	_ EarlyAppender = (*Bursts)(nil)
)

// Bursts is an Appender that writes refused calls of callers with a
// credential (event call, decision deny, auth cert or token) grouped per
// identity, tool, error and reason: the first BurstFirst of a burst at
// once, each its own record, the others of the same window as one record
// when the window ends, whose Count says how many it stands for and whose
// Paths are the distinct paths they named (at most MaxPaths; MorePaths
// counts the namings of the others, a path named twice twice); its other
// members are the latest refusal's. The paths a reason names are not part
// of its key, so refusals of one rule on many paths make one burst. Every
// other record passes through at once.
//
// A refusal costs its caller one request, and each record costs the log a
// line and an fsync; a log that cannot be written refuses every call, so a
// caller sending refused calls as fast as it can must not turn them into a
// disk's worth of records. A refusal folded into a burst is answered
// before its record exists: its request_id is in no record, and a crash
// loses the count of the window.
//
// It is safe for concurrent use. Close writes what is still counted.
type Bursts struct {
	next   Appender
	window time.Duration
	log    *slog.Logger

	mu      sync.Mutex
	open    map[string]*burst // by key
	perID   map[string]int    // open bursts per identity, for maxIdentityBursts
	closed  bool
	pending sync.WaitGroup // summaries being written
}

// burst is the refusals of one key in one window.
type burst struct {
	identity string // the key's identity, for perID
	written  int    // refusals written at once, at most BurstFirst
	count    int    // refusals after them, in the burst's record
	latest   Record
	paths    []string
	seen     map[string]bool
	more     int // paths beyond MaxPaths
	timer    *time.Timer
}

// NewBursts returns next behind a Bursts; window 0 means
// DefaultBurstWindow, a nil log discards the errors of summaries that
// could not be written (they are also next's Err).
func NewBursts(next Appender, window time.Duration, log *slog.Logger) *Bursts {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Bursts{next: next, window: cmp.Or(window, DefaultBurstWindow), log: log,
		open: map[string]*burst{}, perID: map[string]int{}}
}

// Err is next's Err.
func (b *Bursts) Err() error { return b.next.Err() }

// AppendDeferred is next's: a deferred record is an allowed one, never
// part of a burst.
func (b *Bursts) AppendDeferred(r *Record) error { return b.next.AppendDeferred(r) }

// AppendEarly is next's (an early record is an allowed call's), or
// ErrNoEarly when next cannot write early records.
func (b *Bursts) AppendEarly(r *Record) error {
	e, ok := b.next.(EarlyAppender)
	if !ok {
		return ErrNoEarly
	}
	return e.AppendEarly(r)
}

// Committed is next's; only a record AppendEarly wrote is settled.
func (b *Bursts) Committed(early *Record) { b.next.(EarlyAppender).Committed(early) }

// Confirm is next's; only a record AppendEarly wrote is confirmed.
func (b *Bursts) Confirm(early, r *Record) error {
	return b.next.(EarlyAppender).Confirm(early, r)
}

// Amend is next's; only a record AppendEarly wrote is amended.
func (b *Bursts) Amend(early, r *Record) error {
	return b.next.(EarlyAppender).Amend(early, r)
}

// Append writes r at once unless it is a refused call that continues a
// burst past its first BurstFirst: it is then counted into the burst's record and Append returns
// nil. It may keep r's Paths slice until the window ends; r itself is
// copied.
func (b *Bursts) Append(r *Record) error {
	if r.Event != EventCall || r.Decision != Deny || !credentialed(r.Auth) {
		return b.next.Append(r)
	}
	key := burstKey(r)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return b.next.Append(r)
	}
	if _, ok := b.open[key]; !ok {
		switch {
		case len(b.open) >= maxBursts:
			key = otherIdentities
		case b.perID[r.Identity] >= maxIdentityBursts:
			key = r.Identity + otherReasons
		}
	}
	if bu, ok := b.open[key]; ok {
		if bu.written < BurstFirst {
			bu.written++
			b.mu.Unlock()
			return b.next.Append(r)
		}
		bu.add(r)
		b.mu.Unlock()
		return nil
	}
	bu := &burst{identity: r.Identity, written: 1, seen: map[string]bool{}}
	if key == otherIdentities {
		bu.identity = otherIdentities
	}
	b.open[key] = bu
	b.perID[bu.identity]++
	bu.timer = time.AfterFunc(b.window, func() { b.end(key, bu) })
	b.mu.Unlock()
	return b.next.Append(r)
}

// credentialed reports whether a record's Auth is a credential (a client
// certificate or a bearer token). The refusals of callers without one (the
// local user, over stdio or loopback HTTP without authentication) are the
// operator's own and stay one record each.
func credentialed(auth string) bool { return auth == "cert" || auth == "token" }

// burstKey is what refusals of one burst share: identity, tool, error
// type and the reason without the paths the record names.
func burstKey(r *Record) string {
	reason := r.Reason
	paths := slices.Clone(r.Paths)
	// Longest first: a path may be a prefix of another.
	slices.SortFunc(paths, func(a, b string) int { return len(b) - len(a) })
	for _, p := range paths {
		reason = strings.ReplaceAll(reason, p, "\x00")
	}
	return strings.Join([]string{r.Identity, r.Tool, r.Error, reason}, "\x00")
}

// add counts r into the burst.
func (bu *burst) add(r *Record) {
	bu.count++
	bu.latest = *r
	bu.more += r.MorePaths
	for _, p := range r.Paths {
		switch {
		case bu.seen[p]:
		case len(bu.paths) < MaxPaths:
			bu.seen[p] = true
			bu.paths = append(bu.paths, p)
		default:
			bu.more++
		}
	}
}

// end closes the window of key's burst bu and writes what it counted.
func (b *Bursts) end(key string, bu *burst) {
	b.mu.Lock()
	if b.open[key] != bu {
		b.mu.Unlock()
		return
	}
	b.forgetLocked(key, bu)
	b.pending.Add(1)
	b.mu.Unlock()
	defer b.pending.Done()
	b.report(bu)
}

// forgetLocked removes bu, the burst of key, from the open ones. b.mu is
// held.
func (b *Bursts) forgetLocked(key string, bu *burst) {
	delete(b.open, key)
	if b.perID[bu.identity]--; b.perID[bu.identity] <= 0 {
		delete(b.perID, bu.identity)
	}
}

// report writes the record of a burst that counted refusals after those
// it wrote at once.
func (b *Bursts) report(bu *burst) {
	if bu.count == 0 {
		return
	}
	r := bu.latest
	r.Seq, r.Prev, r.Hash = 0, "", ""
	r.Count, r.Paths, r.MorePaths = bu.count, bu.paths, bu.more
	if err := b.next.Append(&r); err != nil {
		b.log.Error("audit record of a burst of refused calls not written", "identity", r.Identity, "tool", r.Tool, "count", r.Count, "err", err)
	}
}

// Close writes the record of every burst still counted and passes later
// records on one by one. It returns once the records of bursts whose
// window ended before it are written too. It is idempotent.
func (b *Bursts) Close() {
	b.mu.Lock()
	open := b.open
	b.open, b.perID, b.closed = map[string]*burst{}, map[string]int{}, true
	b.mu.Unlock()
	for _, bu := range open {
		bu.timer.Stop()
		b.report(bu)
	}
	b.pending.Wait()
}
