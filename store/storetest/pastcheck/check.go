package pastcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// isData reports whether err is an answer about the tree (a diff when
// the model expected otherwise) rather than a failure to answer.
func isData(err error) bool {
	return errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrNotDir) || errors.Is(err, store.ErrIsDir)
}

func describe(r *rec) string {
	if r == nil {
		return "nothing"
	}
	if r.kind == store.KindDir {
		return "a directory"
	}
	return fmt.Sprintf("file %.8s mode %v", r.sum, r.mode)
}

func describeEntry(e store.Entry) string {
	if e.IsDir() {
		return "a directory"
	}
	return fmt.Sprintf("file %.8s mode %v", e.SHA256, e.Mode)
}

// matches reports whether the store's entry e is the model's record r.
func matches(e store.Entry, r *rec) bool {
	if r == nil || e.Kind != r.kind {
		return false
	}
	return r.kind == store.KindDir || (e.SHA256 == r.sum && e.Mode == r.mode && e.Present)
}

// readSum reads a file at rev (live: now) whole and returns its hash.
func (r *runner) readSum(p string, rev uint64) (string, error) {
	var c store.Content
	var err error
	if rev == liveRev {
		c, err = r.rd.Open(r.ctx, p)
	} else {
		c, err = r.rd.OpenAt(r.ctx, p, rev)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	b := make([]byte, c.Size())
	if _, err := c.ReadAt(b, 0); err != nil && len(b) > 0 {
		return "", err
	}
	if s := sum(b); s != c.SHA256() {
		return s, fmt.Errorf("%s read %.8s, its content says %.8s", p, s, c.SHA256())
	}
	return sum(b), nil
}

// liveRev stands for the live tree where a check takes a revision.
const liveRev = ^uint64(0)

// checkTree compares the tree below prefix at rev (liveRev: now) with the
// model's after operation op (live: now): a walk with ReadDir(At), the
// bytes of every file, and, for a past revision, StatAt of every path the
// model ever held there, retained or not.
func (r *runner) checkTree(m *model, op int, rev uint64, prefix string) ([]string, error) {
	got := map[string]store.Entry{}
	var diffs []string
	var walk func(dir string) error
	walk = func(dir string) error {
		var es []store.Entry
		var err error
		if rev == liveRev {
			es, err = r.rd.ReadDir(r.ctx, dir)
		} else {
			es, err = r.rd.ReadDirAt(r.ctx, dir, rev)
		}
		if isData(err) {
			diffs = append(diffs, fmt.Sprintf("ReadDir(%s) at %d: %v", dir, rev, err))
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			got[e.Path] = e
			if e.IsDir() {
				if err := walk(e.Path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(prefix); err != nil {
		return nil, err
	}
	want := m.treeAt(op, prefix)
	for _, p := range slices.Sorted(maps.Keys(want)) {
		w := want[p]
		e, ok := got[p]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("%s at %d: missing, want %s", p, rev, describe(w)))
		case !matches(e, w):
			diffs = append(diffs, fmt.Sprintf("%s at %d: %s, want %s", p, rev, describeEntry(e), describe(w)))
		case w.kind == store.KindFile:
			s, err := r.readSum(p, rev)
			if isData(err) {
				diffs = append(diffs, fmt.Sprintf("open %s at %d: %v", p, rev, err))
			} else if err != nil {
				return nil, err
			} else if s != w.sum {
				diffs = append(diffs, fmt.Sprintf("open %s at %d read %.8s, want %.8s", p, rev, s, w.sum))
			}
		}
	}
	for _, p := range slices.Sorted(maps.Keys(got)) {
		if want[p] == nil {
			diffs = append(diffs, fmt.Sprintf("%s at %d: %s, want nothing", p, rev, describeEntry(got[p])))
		}
	}
	if rev == liveRev {
		return diffs, nil
	}
	for _, p := range m.paths() {
		if !depotpath.Within(p, prefix) {
			continue
		}
		w := m.recordAt(p, op)
		e, err := r.rd.StatAt(r.ctx, p, rev)
		switch {
		case err != nil && !isData(err):
			return nil, err
		case w == nil && err == nil:
			diffs = append(diffs, fmt.Sprintf("StatAt(%s, %d): %s, want nothing (no longer retained, or never there)", p, rev, describeEntry(e)))
		case w != nil && err != nil:
			diffs = append(diffs, fmt.Sprintf("StatAt(%s, %d): %v, want %s", p, rev, err, describe(w)))
		case w != nil && !matches(e, w):
			diffs = append(diffs, fmt.Sprintf("StatAt(%s, %d): %s, want %s", p, rev, describeEntry(e), describe(w)))
		}
	}
	return diffs, nil
}

// checkRevision compares the tree at the revision after operation op.
func (r *runner) checkRevision(m *model, op int) ([]string, error) {
	rev := m.revs[op]
	return r.checkTree(m, m.opAt(rev), rev, depotpath.Root)
}

// checkHistory compares History(p) with the records the model keeps for
// p: the same records, newest first, each with a revision its operation
// could have given it, each readable at that revision.
func (r *runner) checkHistory(m *model, p string) ([]string, error) {
	want := m.history(p)
	got, err := r.rd.History(r.ctx, p)
	switch {
	case errors.Is(err, store.ErrNotExist) && len(want) == 0:
		return nil, nil
	case isData(err):
		return []string{fmt.Sprintf("History(%s): %v, want %d entries", p, err, len(want))}, nil
	case err != nil:
		return nil, err
	}
	var diffs []string
	if len(got) != len(want) {
		var g, w []string
		for _, e := range got {
			g = append(g, fmt.Sprintf("%s@%d", describeEntry(e), e.Revision))
		}
		for _, x := range want {
			w = append(w, fmt.Sprintf("%s@%d", describe(x), m.revs[x.born]))
		}
		return []string{fmt.Sprintf("History(%s) lists %d versions [%s], the model keeps %d [%s]", p, len(got), strings.Join(g, ", "), len(want), strings.Join(w, ", "))}, nil
	}
	for i, e := range got {
		w := want[i]
		if !matches(e, w) {
			diffs = append(diffs, fmt.Sprintf("History(%s)[%d]: %s, want %s", p, i, describeEntry(e), describe(w)))
			continue
		}
		if w.kind != store.KindFile {
			continue
		}
		if lo, hi := m.revs[w.born-1], m.revs[w.born]; e.Revision <= lo || e.Revision > hi {
			diffs = append(diffs, fmt.Sprintf("History(%s)[%d] has revision %d, written by the operation from %d to %d", p, i, e.Revision, lo, hi))
		}
		s, err := r.readSum(p, e.Revision)
		if isData(err) {
			diffs = append(diffs, fmt.Sprintf("History(%s)[%d]: OpenAt(%d): %v", p, i, e.Revision, err))
		} else if err != nil {
			return nil, err
		} else if s != w.sum {
			diffs = append(diffs, fmt.Sprintf("History(%s)[%d]: OpenAt(%d) read %.8s, want %.8s", p, i, e.Revision, s, w.sum))
		}
	}
	return diffs, nil
}

// checkSnapshots compares the snapshot list with the model's holding
// snapshots (barrier snapshots aside).
func (r *runner) checkSnapshots(m *model) ([]string, error) {
	list, err := r.rd.Snapshots(r.ctx)
	if err != nil {
		return nil, err
	}
	var diffs []string
	got := map[string]store.Snapshot{}
	for _, s := range list {
		if strings.HasPrefix(s.Name, barrierPrefix) {
			continue
		}
		got[s.Name] = s
		w := m.snaps[s.Name]
		switch {
		case w == nil:
			diffs = append(diffs, fmt.Sprintf("snapshot %s (prefix %s, revision %d, expires %v) is listed; the model has none (now %v)", s.Name, s.Prefix, s.Revision, s.Expires, m.now))
		case s.Prefix != w.prefix || (w.rev != 0 && s.Revision != w.rev):
			diffs = append(diffs, fmt.Sprintf("snapshot %s is %s at %d, want %s at %d", s.Name, s.Prefix, s.Revision, w.prefix, w.rev))
		}
	}
	for n := range m.snaps {
		if _, ok := got[n]; !ok {
			diffs = append(diffs, fmt.Sprintf("snapshot %s is not listed", n))
		}
	}
	slices.Sort(diffs)
	return diffs, nil
}

// barrierPrefix names the snapshots settle creates and deletes.
const barrierPrefix = "barrier-"

// barrier returns once a write has committed after every write sent
// before it: a snapshot created (tried again until the cluster commits
// it), then deleted with any other barrier snapshot an unknown attempt
// left. A write whose answer was lost can no longer commit after it (the
// stores commit against the revision they read, and the barrier moved
// it), so what the store shows next is final.
func (r *runner) barrier() {
	deadline := time.Now().Add(r.cfg.ReadTimeout)
	for {
		r.barrierN++
		_, err := r.s.CreateSnapshot(r.ctx, store.SnapshotRequest{Name: fmt.Sprintf("%s%d", barrierPrefix, r.barrierN), Writer: "m"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) || r.ctx.Err() != nil {
			r.anomaly("no write committed for %v: %v", r.cfg.ReadTimeout, err)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Delete every barrier snapshot, listing again until none is left: an
	// attempt whose answer was lost may have created one.
	for left := true; left; {
		r.retry("deleting the barrier snapshots", func() error {
			list, err := r.s.Snapshots(r.ctx)
			if err != nil {
				return err
			}
			left = false
			for _, s := range list {
				if strings.HasPrefix(s.Name, barrierPrefix) {
					left = true
					if err := r.s.DeleteSnapshot(r.ctx, s.Name); err != nil && !errors.Is(err, store.ErrNotExist) {
						return err
					}
				}
			}
			return nil
		})
		if r.ctx.Err() != nil || len(r.rep.Anomalies) > 20 {
			return
		}
	}
}

// settle resolves a write whose outcome is unknown: after a barrier, the
// store must show either applied (nil when the write cannot have
// applied) or the model as it was; the model becomes the one it shows.
// Both are compared on the live tree, the snapshot list and every
// path's history.
func (r *runner) settle(desc string, applied *model) {
	r.barrier()
	var rev uint64
	r.retry("revision", func() (err error) { rev, err = r.s.Revision(r.ctx); return err })
	cands := []*model{r.m}
	if applied != nil {
		if applied.dirty {
			applied.revs = append(applied.revs, rev)
			applied.dirty = false
		}
		cands = []*model{applied, r.m}
	}
	var best *model
	var bestDiffs []string
	for _, c := range cands {
		var diffs []string
		r.check("settling "+desc, func() ([]string, error) {
			ds, err := r.observe(c)
			diffs = ds
			return nil, err
		})
		if best == nil || len(diffs) < len(bestDiffs) {
			best, bestDiffs = c, diffs
		}
		if len(diffs) == 0 {
			break
		}
	}
	if len(bestDiffs) > 0 {
		r.anomaly("after %s (outcome unknown) the store matches neither outcome; nearest: %s", desc, strings.Join(bestDiffs, "; "))
	}
	r.m = best
	r.logf("step %d: %s settled: applied %v", r.step, desc, applied != nil && best == applied)
	// A snapshot the unknown write created gets its revision from the list.
	for _, s := range r.m.snaps {
		if s.rev != 0 {
			continue
		}
		r.retry("snapshots", func() error {
			list, err := r.s.Snapshots(r.ctx)
			for _, x := range list {
				if x.Name == s.name {
					r.placeSnapshot(s, x.Revision)
				}
			}
			return err
		})
	}
}

// observe returns how the store differs from m: live tree, snapshot
// list, histories.
func (r *runner) observe(m *model) ([]string, error) {
	diffs, err := r.checkTree(m, live, liveRev, depotpath.Root)
	if err != nil {
		return nil, err
	}
	ds, err := r.checkSnapshots(m)
	if err != nil {
		return nil, err
	}
	diffs = append(diffs, ds...)
	for _, p := range m.paths() {
		ds, err := r.checkHistory(m, p)
		if err != nil {
			return nil, err
		}
		diffs = append(diffs, ds...)
	}
	return diffs, nil
}
