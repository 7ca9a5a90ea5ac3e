package pastcheck

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// content is the i-th of the contents writes choose from: few, so that
// writes repeat content (unchanged writes, shared blobs).
func content(i int) []byte {
	return []byte(strings.Repeat(fmt.Sprintf("content %d.", i), 1+i*7))
}

// maxDepth is the depth of the deepest directory operations pick, and
// maxTreeDepth that of the deepest path a copy or move may make: a tree
// copied into itself again and again would otherwise grow the tree, and
// the time of each check, without bound.
const maxDepth, maxTreeDepth = 3, 6

// tooDeep reports whether moving or copying from to to would make a path
// deeper than maxTreeDepth.
func (r *runner) tooDeep(from, to string) bool {
	depth := func(p string) int { return strings.Count(p, "/") }
	deepest := depth(from)
	for _, d := range r.m.descendants(from) {
		deepest = max(deepest, depth(d))
	}
	return depth(to)+deepest-depth(from) > maxTreeDepth
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
		if rc.kind == store.KindDir && strings.Count(p, "/") <= maxDepth {
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
		if len(reqs) > 0 && r.rng.IntN(2) == 0 {
			p = reqs[0].Path
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
	if from == "" || r.tooDeep(from, to) {
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
	if r.cfg.Trace {
		r.logf("step %d: clock moved on %v; expired: %v", r.step, d, gone)
	}
	r.m = next
	if len(gone) > 0 {
		r.check("snapshot list right after expiry", func() ([]string, error) { return r.checkSnapshots(r.m) })
	}
	r.retry("expiry", func() error {
		e, ok := r.s.(Expirer)
		if !ok {
			return errors.New("the store has no ExpireEntries")
		}
		for {
			n, err := e.ExpireEntries(r.ctx)
			if err != nil || n == 0 {
				return err
			}
		}
	})
}

// restart closes the host and opens it again (Config.Reopen), maybe with
// another KeepVersions.
func (r *runner) restart() {
	if r.cfg.Reopen == nil {
		return
	}
	r.rep.Ops["restart"]++
	keep := r.m.keep
	if r.rng.IntN(2) == 0 {
		keep = r.rng.IntN(4)
	}
	r.reopen(keep)
	var rev uint64
	r.retry("revision", func() (err error) { rev, err = r.s.Revision(r.ctx); return err })
	if last := r.m.revs[len(r.m.revs)-1]; rev < last {
		r.anomaly("the restarted host is at revision %d, below the %d the run already saw", rev, last)
	}
}

// reopen restarts the host with keep versions.
func (r *runner) reopen(keep int) {
	r.retry("restarting the host", func() error {
		s, err := r.cfg.Reopen(r.ctx, keep)
		if err == nil {
			r.s = s
		}
		return err
	})
	r.m.keep = keep
	if r.cfg.Trace {
		r.logf("step %d: restarted, keeping %d versions", r.step, keep)
	}
}

// crash restarts the host while a put is on its way, as a host killed
// mid-write: the put may have committed or not, whatever it answered
// (store.ErrClosed, most often), and is settled as an unknown outcome.
func (r *runner) crash() {
	p := r.filePath()
	if r.cfg.Reopen == nil || r.m.parents(p, false) != nil || (r.m.live[p] != nil && r.m.live[p].kind == store.KindDir) {
		return
	}
	r.rep.Ops["crash"]++
	r.rep.Ops["put"]++
	s, b := r.pickContent()
	next := r.m.clone()
	want := next.put(p, s, 0)
	host, errc := r.s, make(chan error, 1)
	go func() {
		_, err := host.Put(r.ctx, store.PutRequest{Path: p, Data: b, Writer: "m"})
		errc <- err
	}()
	time.Sleep(time.Duration(r.rng.IntN(3000)) * time.Microsecond)
	r.reopen(r.m.keep)
	err := <-errc
	desc := fmt.Sprintf("Put(%s, %.8s) on a host closed meanwhile", p, s)
	if r.cfg.Trace {
		r.logf("step %d: %s: %s (model: %s)", r.step, desc, errText(err), errText(want))
	}
	switch {
	case err == nil && want == nil:
		// Acknowledged by the closed host, maybe after the new host
		// opened: the new host shows it, and its revision, after Sync.
		if y, ok := r.s.(syncer); ok {
			r.retry("sync after "+desc, func() error { return y.Sync(r.ctx) })
		}
		r.commit(next, desc)
	case sameClass(want, err):
	case err != nil:
		r.rep.Unknown++
		if want != nil {
			next = nil
		}
		r.settle(desc, next)
	default:
		r.anomaly("%s: the store answered success, the model %v", desc, want)
	}
}
