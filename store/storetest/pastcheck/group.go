package pastcheck

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// group runs several puts, and maybe a snapshot, at once, so that they
// share commits; the model applies them in the order of the revisions the
// store answered. Two of them may write one path: each acknowledged write
// is a record of its own, kept as any replaced record is. Under faults
// the paths differ, so that a put whose outcome is unknown is settled by
// its path's entry.
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
		switch n := r.rng.IntN(4); {
		case n == 0 && len(calls) > 0:
			p = calls[0].p
		case n < 3:
			if q := r.livePath(store.KindFile); q != "" {
				p = q // a replace, which a snapshot in the same commit must still see as it was
			}
		}
		if (seen[p] && r.cfg.Faults) || r.m.parents(p, false) != nil || (r.m.live[p] != nil && r.m.live[p].kind == store.KindDir) {
			continue
		}
		seen[p] = true
		s, b := r.pickContent()
		calls = append(calls, &call{p: p, sum: s, data: b})
	}
	var snapName, prefix string
	var snapGot store.Snapshot
	var snapErr error
	if r.rng.IntN(2) == 0 {
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
	if r.cfg.Trace {
		for _, c := range done {
			r.logf("step %d: grouped Put(%s, %.8s): %v at %d", r.step, c.p, c.sum, c.res.Status, c.res.Entry.Revision)
		}
		if snapName != "" {
			r.logf("step %d: grouped CreateSnapshot(%s, %s): revision %d, %s", r.step, snapName, prefix, snapGot.Revision, errText(snapErr))
		}
	}
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
			var ws []string
			for _, c := range done {
				ws = append(ws, fmt.Sprintf("%s %v at %d", c.p, c.res.Status, c.res.Entry.Revision))
			}
			r.anomaly("revision %d after a group (%s) whose last change has revision %d", rev, strings.Join(ws, ", "), last)
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
