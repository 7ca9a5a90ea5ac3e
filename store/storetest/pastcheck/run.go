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
	"sync"
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
	// Expire runs the store's expiry now (its ExpireEntries), so that a
	// snapshot past its time is released before the next read.
	Expire func(ctx context.Context) error
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
	// Omit leaves parts of the run out: a store's test omits one where
	// it has a known bug, and runs it in a subtest skipped until the fix
	// lands, so the rest keeps checking by default.
	Omit []Feature
}

// Feature is a part of a run that Config.Omit can leave out.
type Feature string

// The features a run can omit.
const (
	// RepeatInBatch is PutBatch writing one path twice: the first write
	// is never visible, so it must not become a version.
	RepeatInBatch Feature = "repeat-in-batch"
	// ListAtExpiry is the snapshot list read at the instant a snapshot
	// expires, before the store's expiry runs: it must not list it.
	ListAtExpiry Feature = "list-at-expiry"
	// SnapshotInGroup is a snapshot created among concurrent puts that
	// may share its commit: it must hold exactly the writes at or below
	// its revision.
	SnapshotInGroup Feature = "snapshot-in-group"
)

func (r *runner) omits(f Feature) bool { return slices.Contains(r.cfg.Omit, f) }

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

// runner is one run: the store, the model, and the random source.
type runner struct {
	ctx      context.Context
	s        store.Store
	cfg      Config
	rng      *rand.Rand
	m        *model
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
		data: map[string][]byte{}, rep: Report{Seed: cfg.Seed, Ops: map[string]int{}}}
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
	case n < 67:
		r.expire()
	case n < 75:
		r.group()
	default:
		r.read()
	}
}

// content is the i-th of the contents writes choose from: few, so that
// writes repeat content (unchanged writes, shared blobs).
func content(i int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("content %d.", i), 1+i*7))
}

var (
	dirNames  = []string{"/a", "/b", "/a/c", "/d/e"}
	fileNames = []string{"f0", "f1", "f2"}
)

// filePath picks a file path: in a live directory or one of the usual
// ones, or at the root.
func (r *runner) filePath() string {
	return depotpath.Join(r.dirPath(true), fileNames[r.rng.IntN(len(fileNames))])
}

// dirPath picks a directory path, live ones (any depth moves and copies
// made) as often as the usual ones.
func (r *runner) dirPath(root bool) string {
	var dirs []string
	for p, rc := range r.m.live {
		if rc.kind == store.KindDir {
			dirs = append(dirs, p)
		}
	}
	slices.Sort(dirs)
	if root && r.rng.IntN(6) == 0 {
		return depotpath.Root
	}
	if len(dirs) > 0 && r.rng.IntN(2) == 0 {
		return dirs[r.rng.IntN(len(dirs))]
	}
	return dirNames[r.rng.IntN(len(dirNames))]
}

// livePath picks a live path of the given kind, "" when there is none.
func (r *runner) livePath(kind store.Kind) string {
	var ps []string
	for p, rc := range r.m.live {
		if rc.kind == kind {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return ""
	}
	slices.Sort(ps)
	return ps[r.rng.IntN(len(ps))]
}

func (r *runner) pickContent() (string, []byte) {
	b := content(r.rng.IntN(6))
	return sum(b), b
}

func (r *runner) pickMode() fs.FileMode {
	if r.rng.IntN(8) == 0 {
		return 0o600
	}
	return 0
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

func (r *runner) put() {
	p := r.filePath()
	if r.rng.IntN(3) == 0 {
		if q := r.livePath(store.KindFile); q != "" {
			p = q // an overwrite
		}
	}
	s, b := r.pickContent()
	mode := r.pickMode()
	var res store.PutResult
	r.write("put", fmt.Sprintf("Put(%s, %.8s, %v)", p, s, mode), func() (err error) {
		res, err = r.s.Put(r.ctx, store.PutRequest{Path: p, Data: b, Mode: mode, Writer: "m"})
		return err
	}, func(m *model) error { return m.put(p, s, mode) })
	if res.Entry.Path == p && (res.Entry.SHA256 != s || res.Entry.Mode != mode) {
		r.anomaly("Put(%s) answered entry %.8s %v, want %.8s %v", p, res.Entry.SHA256, res.Entry.Mode, s, mode)
	}
}

// batch stores two or three files in one PutBatch, sometimes one path
// twice: the first write of it is never visible, so it is no version.
func (r *runner) batch() {
	var reqs []store.PutRequest
	var desc []string
	for range 2 + r.rng.IntN(2) {
		p := r.filePath()
		if len(reqs) > 0 && r.rng.IntN(2) == 0 && !r.omits(RepeatInBatch) {
			p = reqs[0].Path
		}
		if r.omits(RepeatInBatch) && slices.ContainsFunc(reqs, func(q store.PutRequest) bool { return q.Path == p }) {
			continue
		}
		s, b := r.pickContent()
		reqs = append(reqs, store.PutRequest{Path: p, Data: b, Writer: "m"})
		desc = append(desc, fmt.Sprintf("%s %.8s", p, s))
	}
	r.write("batch", fmt.Sprintf("PutBatch(%s)", strings.Join(desc, ", ")), func() error {
		_, err := r.s.PutBatch(r.ctx, reqs)
		if be, ok := err.(*store.BatchError); ok {
			err = be.Err
		}
		return err
	}, func(m *model) error {
		for _, q := range reqs {
			if err := m.put(q.Path, sum(q.Data), 0); err != nil {
				return err
			}
		}
		return nil
	})
}

func (r *runner) remove() {
	p := r.livePath(store.KindFile)
	recursive := false
	switch r.rng.IntN(4) {
	case 0:
		p, recursive = r.livePath(store.KindDir), r.rng.IntN(4) != 0
	case 1:
		p = r.filePath() // often absent
	}
	if p == "" {
		return
	}
	r.write("remove", fmt.Sprintf("Remove(%s, recursive %v)", p, recursive), func() error {
		return r.s.Remove(r.ctx, store.RemoveRequest{Path: p, Recursive: recursive, Writer: "m"})
	}, func(m *model) error { return m.remove(p, recursive) })
}

// transfer moves or copies a live file to a file path, or a live
// directory to a directory path.
func (r *runner) transfer(move bool) {
	from, to := r.livePath(store.KindFile), r.filePath()
	if r.rng.IntN(3) == 0 {
		from, to = r.livePath(store.KindDir), r.dirPath(false)+"/"+[]string{"x", "y"}[r.rng.IntN(2)]
		if r.rng.IntN(3) == 0 {
			to = r.dirPath(false)
		}
	}
	if from == "" {
		return
	}
	ifAbsent := r.rng.IntN(8) == 0
	kind, desc := "copy", fmt.Sprintf("Copy(%s → %s, ifAbsent %v)", from, to, ifAbsent)
	if move {
		kind, desc = "move", "Move"+strings.TrimPrefix(desc, "Copy")
	}
	r.write(kind, desc, func() (err error) {
		if move {
			_, err = r.s.Move(r.ctx, store.MoveRequest{From: from, To: to, IfAbsent: ifAbsent, Writer: "m"})
		} else {
			_, err = r.s.Copy(r.ctx, store.CopyRequest{From: from, To: to, IfAbsent: ifAbsent, Writer: "m"})
		}
		return err
	}, func(m *model) error { return m.transfer(from, to, -1, move, ifAbsent) })
}

// restore copies a file as it was at a past revision (one its history
// lists, a snapshot's, or any earlier one, maybe no longer kept) over
// itself, as guide_restore does, or to another path.
func (r *runner) restore() {
	ps := r.m.paths()
	if len(ps) == 0 {
		return
	}
	p := ps[r.rng.IntN(len(ps))]
	var rev uint64
	switch h := r.m.history(p); {
	case r.rng.IntN(4) == 0 && len(r.m.snaps) > 0:
		names := slices.Sorted(maps.Keys(r.m.snaps))
		rev = r.m.snaps[names[r.rng.IntN(len(names))]].rev
	case len(h) > 0 && r.rng.IntN(3) != 0:
		rev = r.m.revs[h[r.rng.IntN(len(h))].born]
	default:
		rev = r.m.revs[r.rng.IntN(len(r.m.revs))]
	}
	if rev == 0 {
		return
	}
	to := p
	if r.rng.IntN(4) == 0 {
		to = r.filePath()
	}
	fromOp := r.m.opAt(rev)
	r.write("restore", fmt.Sprintf("Copy(%s@%d → %s)", p, rev, to), func() error {
		_, err := r.s.Copy(r.ctx, store.CopyRequest{From: p, FromRevision: rev, To: to, Writer: "m"})
		return err
	}, func(m *model) error { return m.transfer(p, to, fromOp, false, false) })
}

func (r *runner) createSnapshot() {
	r.snapN++
	name := fmt.Sprintf("s%d", r.snapN)
	if r.rng.IntN(10) == 0 && len(r.m.snaps) > 0 {
		name = slices.Sorted(maps.Keys(r.m.snaps))[0] // taken
	}
	prefix := r.dirPath(true)
	var expires time.Time
	if r.rng.IntN(3) == 0 {
		expires = r.m.now.Add(time.Duration(1+r.rng.IntN(10)) * time.Minute)
	}
	var got store.Snapshot
	r.write("snapshot", fmt.Sprintf("CreateSnapshot(%s, %s)", name, prefix), func() (err error) {
		got, err = r.s.CreateSnapshot(r.ctx, store.SnapshotRequest{Name: name, Prefix: prefix, Writer: "m", Expires: expires})
		return err
	}, func(m *model) error {
		// The revision is the store's; the check below says whether it
		// is the one the snapshot should hold.
		return m.createSnapshot(name, prefix, m.last(), 0, expires)
	})
	if s := r.m.snaps[name]; s != nil && s.rev == 0 {
		r.placeSnapshot(s, got.Revision)
	}
}

// placeSnapshot records the revision the store gave a snapshot the model
// just created: it must hold the tree after the last operation.
func (r *runner) placeSnapshot(s *snap, rev uint64) {
	s.rev = rev
	if op := r.m.opAt(rev); op != s.op {
		r.anomaly("snapshot %s has revision %d, the tree after operation %d; it was created after operation %d (revision %d)",
			s.name, rev, op, s.op, r.m.revs[s.op])
		if op >= 0 {
			s.op = op
		}
	}
}

func (r *runner) deleteSnapshot() {
	name := "none"
	if len(r.m.snaps) > 0 && r.rng.IntN(8) != 0 {
		names := slices.Sorted(maps.Keys(r.m.snaps))
		name = names[r.rng.IntN(len(names))]
	}
	r.write("unsnapshot", fmt.Sprintf("DeleteSnapshot(%s)", name), func() error {
		return r.s.DeleteSnapshot(r.ctx, name)
	}, func(m *model) error { return m.deleteSnapshot(name) })
}

// expire moves the clock on; a snapshot past its time must be gone from
// the list at once, and its hold released by the store's expiry.
func (r *runner) expire() {
	r.rep.Ops["expire"]++
	d := time.Duration(1+r.rng.IntN(5)) * time.Minute
	next := r.m.clone()
	gone := next.advance(d)
	r.cfg.Clock.Advance(d)
	r.m = next
	if len(gone) > 0 && !r.omits(ListAtExpiry) {
		r.check("snapshot list right after expiry", func() ([]string, error) { return r.checkSnapshots(r.m) })
	}
	r.retry("expiry", func() error { return r.cfg.Expire(r.ctx) })
}

// group runs several puts of distinct files, and maybe a snapshot, at
// once, so that they share commits; the model applies them in the order
// of the revisions the store answered.
func (r *runner) group() {
	r.rep.Ops["group"]++
	type call struct {
		p, sum string
		data   []byte
		res    store.PutResult
		err    error
	}
	var calls []*call
	seen := map[string]bool{}
	for range 2 + r.rng.IntN(4) {
		p := r.filePath()
		if r.rng.IntN(2) == 0 {
			if q := r.livePath(store.KindFile); q != "" {
				p = q // a replace, which a snapshot in the same commit must still see as it was
			}
		}
		if seen[p] || r.m.parents(p, false) != nil || (r.m.live[p] != nil && r.m.live[p].kind == store.KindDir) {
			continue
		}
		seen[p] = true
		s, b := r.pickContent()
		calls = append(calls, &call{p: p, sum: s, data: b})
	}
	var snapName, prefix string
	var snapGot store.Snapshot
	var snapErr error
	if r.rng.IntN(2) == 0 && !r.omits(SnapshotInGroup) {
		r.snapN++
		snapName, prefix = fmt.Sprintf("s%d", r.snapN), r.dirPath(true)
		if prefix != depotpath.Root && r.m.live[prefix] == nil {
			prefix = depotpath.Root
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			<-start
			c.res, c.err = r.s.Put(r.ctx, store.PutRequest{Path: c.p, Data: c.data, Writer: "m"})
		})
	}
	if snapName != "" {
		wg.Go(func() {
			<-start
			snapGot, snapErr = r.s.CreateSnapshot(r.ctx, store.SnapshotRequest{Name: snapName, Prefix: prefix, Writer: "m"})
		})
	}
	close(start)
	wg.Wait()
	r.rep.Ops["put"] += len(calls)

	var unknown []*call
	var done []*call
	for _, c := range calls {
		switch {
		case c.err == nil:
			done = append(done, c)
		case r.cfg.Faults && !isDefinite(c.err):
			unknown = append(unknown, c)
		default:
			r.anomaly("grouped Put(%s): %v", c.p, c.err)
		}
	}
	if len(unknown) > 0 || (snapErr != nil && r.cfg.Faults && !isDefinite(snapErr)) {
		r.rep.Unknown += len(unknown)
		r.barrier()
		// A grouped put that committed shows its content at a revision
		// above the group's start; the barrier wrote no file.
		base := r.m.revs[len(r.m.revs)-1]
		for _, c := range unknown {
			var e store.Entry
			var err error
			r.retry("stat "+c.p, func() error {
				e, err = r.s.Stat(r.ctx, c.p)
				if errors.Is(err, store.ErrNotExist) {
					return nil
				}
				return err
			})
			if err == nil && e.Revision > base && e.SHA256 == c.sum {
				c.res.Entry = e
				done = append(done, c)
			}
		}
	}
	slices.SortFunc(done, func(a, b *call) int { return cmpU(a.res.Entry.Revision, b.res.Entry.Revision) })
	var snapRev uint64
	snapOK := snapName != "" && snapErr == nil
	if snapName != "" && snapErr != nil {
		if r.cfg.Faults && !isDefinite(snapErr) {
			r.retry("snapshots", func() error {
				list, err := r.s.Snapshots(r.ctx)
				for _, s := range list {
					if s.Name == snapName {
						snapOK, snapGot = true, s
					}
				}
				return err
			})
		} else {
			r.anomaly("grouped CreateSnapshot(%s, %s): %v", snapName, prefix, snapErr)
		}
	}
	if snapOK {
		snapRev = snapGot.Revision
	}
	placed := !snapOK
	for _, c := range done {
		if !placed && snapRev < c.res.Entry.Revision {
			r.m.createSnapshot(snapName, prefix, r.m.last(), snapRev, time.Time{})
			placed = true
		}
		next := r.m.clone()
		if err := next.put(c.p, c.sum, 0); err != nil {
			r.anomaly("grouped Put(%s) succeeded, the model refuses it: %v", c.p, err)
			continue
		}
		if next.dirty {
			prev := next.revs[len(next.revs)-1]
			if c.res.Entry.Revision <= prev {
				r.anomaly("grouped Put(%s) made revision %d, not above %d", c.p, c.res.Entry.Revision, prev)
			}
			next.revs = append(next.revs, c.res.Entry.Revision)
			next.dirty = false
		}
		r.m = next
	}
	if !placed {
		r.m.createSnapshot(snapName, prefix, r.m.last(), snapRev, time.Time{})
	}
	if len(done) > 0 {
		// Later operations get revisions above the group's, whatever else
		// its commit numbered.
		var rev uint64
		r.retry("revision", func() (err error) { rev, err = r.s.Revision(r.ctx); return err })
		if last := r.m.revs[len(r.m.revs)-1]; rev < last {
			r.anomaly("revision %d after a group whose last write has revision %d", rev, last)
		}
	}
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
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
func (r *runner) final() {
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

// check runs one comparison: its differences are anomalies; an error
// (the store could not answer) is tried again under faults until
// ReadTimeout, else an anomaly too.
func (r *runner) check(what string, f func() ([]string, error)) {
	r.rep.Checks++
	deadline := time.Now().Add(r.cfg.ReadTimeout)
	for {
		diffs, err := f()
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

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
