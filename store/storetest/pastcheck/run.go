package pastcheck

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// Clock is a store's clock the checker moves on, for snapshot expiry.
// It is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock at a fixed date.
func NewClock() *Clock {
	c := &Clock{}
	c.ns.Store(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

// Now is the clock's time; pass it as the store's Options.Now.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// Config is one run of the checker.
type Config struct {
	// Seed chooses the operations: the same seed makes the same choices
	// (concurrent writes may still commit in another order).
	Seed uint64
	// Ops is how many operations to run, reads included.
	Ops int
	// Stop, when not nil, ends the operations early once it is closed;
	// the final checks still run.
	Stop <-chan struct{}
	// KeepVersions is the store's Options.KeepVersions.
	KeepVersions int
	// Clock is the store's clock; the checker advances it to expire
	// snapshots.
	Clock *Clock
	// Readers are other hosts of the same depot (store/nats): each check
	// reads from the store or one of them, after its Sync when it has
	// one.
	Readers []store.Store
	// Reopen, when set, restarts the host: it closes the store the run
	// uses now and opens it again, keeping keep versions, and the run
	// goes on with the new one (its tests check that a restarted host
	// shows the same past; keep changes now and then, and a lower one
	// trims each path's history at that path's next change).
	Reopen func(ctx context.Context, keep int) (store.Store, error)
	// Faults says the store's cluster is being faulted meanwhile: an
	// error the model did not predict is an unknown outcome, resolved
	// (see Run), and reads that fail are tried again until ReadTimeout.
	// Without it, every unpredicted error is an anomaly.
	Faults bool
	// ReadTimeout bounds the retries of one check, and of the barrier
	// that settles unknown outcomes, under faults; 0 means 2 minutes.
	ReadTimeout time.Duration
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
	// Trace logs every write and its outcome, to follow a failure.
	Trace bool
}

// Report is what a run did and found.
type Report struct {
	Seed      uint64
	Ops       map[string]int // operations run, by kind
	Checks    int            // reads compared with the model
	Unknown   int            // writes whose outcome was unknown, then resolved
	Anomalies []string       // every difference from the model, with its operation
}

// String is a one-line summary.
func (r Report) String() string {
	var kinds []string
	total := 0
	for _, k := range slices.Sorted(maps.Keys(r.Ops)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, r.Ops[k]))
		total += r.Ops[k]
	}
	return fmt.Sprintf("seed %d: %d operations (%s), %d checks, %d unknown outcomes, %d anomalies",
		r.Seed, total, strings.Join(kinds, ", "), r.Checks, r.Unknown, len(r.Anomalies))
}

// Expirer is the store's expiry run on demand (both stores have it):
// the checker runs it after moving the clock on, so that a snapshot past
// its time is released before the next read.
type Expirer interface {
	ExpireEntries(ctx context.Context) (int, error)
}

// syncer is a host that catches up with its cluster on demand.
type syncer interface {
	Sync(ctx context.Context) error
}

// runner is one run: the store, the model, and the random source.
type runner struct {
	ctx      context.Context
	s        store.Store
	cfg      Config
	rng      *rand.Rand
	m        *model
	rd       store.Store       // the host the current check reads from
	host     int               // the host checks read from: 0 the store, i Readers[i-1], -1 any
	data     map[string][]byte // content by hash
	rep      Report
	step     int // the operation being run, for messages
	snapN    int // snapshots named so far
	barrierN int // barrier snapshots named so far
}

// Run drives s, a new empty store opened with cfg.KeepVersions and
// cfg.Clock, and the model with the same random operations, and compares
// every read with the model's answer: the live tree, the tree at past
// revisions (ReadDirAt, StatAt, OpenAt), each snapshot's tree, file
// histories and the snapshot list. A write that fails with an error the
// model did not predict, under faults, is settled before the next step:
// a barrier write is retried until the cluster commits it (after which
// the unknown write can no longer commit), then the store's tree is read
// and must equal one of the two outcomes, which the model keeps.
func Run(ctx context.Context, s store.Store, cfg Config) Report {
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 2 * time.Minute
	}
	r := &runner{ctx: ctx, s: s, cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		data: map[string][]byte{}, rep: Report{Seed: cfg.Seed, Ops: map[string]int{}}, host: -1}
	for i := range 6 {
		b := content(i)
		r.data[sum(b)] = b
	}
	var rev uint64
	r.retry("initial revision", func() (err error) { rev, err = s.Revision(ctx); return err })
	r.m = newModel(cfg.KeepVersions, cfg.Clock.Now(), rev)
	for r.step = 0; r.step < cfg.Ops && ctx.Err() == nil && !closed(cfg.Stop); r.step++ {
		r.one()
		if len(r.rep.Anomalies) > 20 {
			r.logf("stopping after %d anomalies", len(r.rep.Anomalies))
			break
		}
	}
	r.final()
	return r.rep
}

func (r *runner) logf(format string, args ...any) {
	if r.cfg.Logf != nil {
		r.cfg.Logf(format, args...)
	}
}

// anomaly records a difference from the model.
func (r *runner) anomaly(format string, args ...any) {
	msg := fmt.Sprintf("seed %d step %d: ", r.cfg.Seed, r.step) + fmt.Sprintf(format, args...)
	r.rep.Anomalies = append(r.rep.Anomalies, msg)
	r.logf("ANOMALY %s", msg)
}

// one runs one random operation.
func (r *runner) one() {
	switch n := r.rng.IntN(100); {
	case n < 26:
		r.put()
	case n < 30:
		r.batch()
	case n < 33:
		r.remove()
	case n < 39:
		r.transfer(true)
	case n < 45:
		r.transfer(false)
	case n < 54:
		r.restore()
	case n < 60:
		r.createSnapshot()
	case n < 64:
		r.deleteSnapshot()
	case n < 65:
		r.expire()
	case n < 66:
		r.restart()
	case n < 67:
		r.crash()
	case n < 75:
		r.group()
	default:
		r.read()
	}
}

// write runs one write on the store and the model. call returns the
// store's error; apply makes the change on the model (a clone of it) and
// returns the error the model predicts. rev, when call reports one, is
// the revision of the record the write made, checked against the
// revision after the write.
func (r *runner) write(kind, desc string, call func() error, apply func(m *model) error) {
	r.rep.Ops[kind]++
	next := r.m.clone()
	want := apply(next)
	err := call()
	if r.cfg.Trace {
		r.logf("step %d: %s: %s (model: %s)", r.step, desc, errText(err), errText(want))
	}
	switch {
	case sameClass(want, err) && err == nil:
		r.commit(next, desc)
	case sameClass(want, err):
		// Refused as predicted: nothing changed.
	case err != nil && r.cfg.Faults && !isDefinite(err):
		r.rep.Unknown++
		r.logf("step %d: %s: unknown outcome: %v", r.step, desc, err)
		if want != nil {
			next = nil // it cannot have applied
		}
		r.settle(desc, next)
	default:
		r.anomaly("%s: the store answered %v, the model %v", desc, errText(err), errText(want))
		if err == nil {
			r.commit(next, desc) // follow the store, to report what differs next
		}
	}
}

// commit makes next the model, with the store's revision after the
// operation when it changed the tree; a change must have a revision
// above every earlier one.
func (r *runner) commit(next *model, desc string) {
	if next.dirty {
		var rev uint64
		r.retry("revision", func() (err error) { rev, err = r.s.Revision(r.ctx); return err })
		if prev := next.revs[len(next.revs)-1]; rev <= prev {
			r.anomaly("%s changed the tree but the revision stayed %d (was %d)", desc, rev, prev)
		}
		next.revs = append(next.revs, rev)
		next.dirty = false
	}
	r.m = next
}

// isDefinite reports whether err says that the write was refused without
// doing anything: a refusal the contract defines, whatever the faults.
func isDefinite(err error) bool {
	for _, e := range []error{store.ErrNotExist, store.ErrExist, store.ErrConflict, store.ErrNotEmpty, store.ErrIsDir,
		store.ErrNotDir, store.ErrRevision, store.ErrLimit, fs.ErrInvalid} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return "success"
	}
	return err.Error()
}

// read runs one check of the past or present against the model.
func (r *runner) read() {
	r.rep.Ops["read"]++
	switch r.rng.IntN(5) {
	case 0:
		r.check("live tree", func() ([]string, error) { return r.checkTree(r.m, live, liveRev, depotpath.Root) })
	case 1:
		op := r.rng.IntN(len(r.m.revs))
		r.check(fmt.Sprintf("tree at revision %d", r.m.revs[op]), func() ([]string, error) { return r.checkRevision(r.m, op) })
	case 2:
		if len(r.m.snaps) == 0 {
			return
		}
		names := slices.Sorted(maps.Keys(r.m.snaps))
		s := r.m.snaps[names[r.rng.IntN(len(names))]]
		r.check("snapshot "+s.name, func() ([]string, error) { return r.checkTree(r.m, s.op, s.rev, s.prefix) })
	case 3:
		ps := r.m.paths()
		if len(ps) == 0 {
			return
		}
		p := ps[r.rng.IntN(len(ps))]
		r.check("history of "+p, func() ([]string, error) { return r.checkHistory(r.m, p) })
	case 4:
		r.check("snapshot list", func() ([]string, error) { return r.checkSnapshots(r.m) })
	}
}

// final checks everything once more: the live tree, every snapshot, every
// history, the snapshot list and a sample of past revisions.
// On several hosts, every host is checked.
func (r *runner) final() {
	for h := range 1 + len(r.cfg.Readers) {
		r.host = h
		r.check("live tree", func() ([]string, error) { return r.checkTree(r.m, live, liveRev, depotpath.Root) })
		r.check("snapshot list", func() ([]string, error) { return r.checkSnapshots(r.m) })
		for _, n := range slices.Sorted(maps.Keys(r.m.snaps)) {
			s := r.m.snaps[n]
			r.check("snapshot "+n, func() ([]string, error) { return r.checkTree(r.m, s.op, s.rev, s.prefix) })
		}
		for _, p := range r.m.paths() {
			r.check("history of "+p, func() ([]string, error) { return r.checkHistory(r.m, p) })
		}
		for i := 0; i < len(r.m.revs); i += max(1, len(r.m.revs)/20) {
			r.check(fmt.Sprintf("tree at revision %d", r.m.revs[i]), func() ([]string, error) { return r.checkRevision(r.m, i) })
		}
	}
}

// check runs one comparison: its differences are anomalies; an error
// (the store could not answer) is tried again under faults until
// ReadTimeout, else an anomaly too.
func (r *runner) check(what string, f func() ([]string, error)) {
	r.rep.Checks++
	deadline := time.Now().Add(r.cfg.ReadTimeout)
	r.rd = r.s
	h := r.host
	if h < 0 && len(r.cfg.Readers) > 0 {
		h = r.rng.IntN(len(r.cfg.Readers) + 1)
	}
	if h > 0 {
		r.rd = r.cfg.Readers[h-1]
		what += fmt.Sprintf(" on reader %d", h)
	}
	for {
		var diffs []string
		err := r.sync()
		if err == nil {
			diffs, err = f()
		}
		if err == nil {
			for _, d := range diffs {
				r.anomaly("%s: %s", what, d)
			}
			return
		}
		if !r.cfg.Faults || time.Now().After(deadline) || r.ctx.Err() != nil {
			r.anomaly("%s: %v", what, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// retry runs f until it succeeds; under faults for up to ReadTimeout,
// else once. A failure is an anomaly.
func (r *runner) retry(what string, f func() error) {
	deadline := time.Now().Add(r.cfg.ReadTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if !r.cfg.Faults || time.Now().After(deadline) || r.ctx.Err() != nil {
			r.anomaly("%s: %v", what, err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sync makes the host a check reads from catch up with every change
// committed before: the writer has, another host may not have yet.
func (r *runner) sync() error {
	if y, ok := r.rd.(syncer); ok && r.rd != r.s {
		return y.Sync(r.ctx)
	}
	return nil
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
