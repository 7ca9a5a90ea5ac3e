package rules

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// CreateSnapshot is store.Versions.CreateSnapshot: one snapshot record,
// holding the revision the transaction starts from. What it holds is
// decided as each later change replaces a record (retain), so creating
// one costs the same whatever the size of the tree.
func (w Writes) CreateSnapshot(ctx context.Context, req store.SnapshotRequest) (store.Snapshot, error) {
	prefix, err := check.Snapshot(req)
	if err != nil {
		return store.Snapshot{}, err
	}
	var out store.Snapshot
	for releasing := true; releasing; {
		releasing = false
		err = w.C.Update(ctx, func(t Txn) error {
			snaps, err := t.Snapshots()
			if err != nil {
				return err
			}
			if i := find(snaps, req.Name); i >= 0 {
				if len(Holding(snaps[i:i+1], t.Now())) > 0 {
					return fmt.Errorf("snapshot %s: %w", req.Name, store.ErrExist)
				}
				// Expired, so no longer listed: its name is free once
				// its release, done here, is.
				done, err := unhold(t, snaps, i, ReleaseBudget(t.Limits()))
				if err != nil || !done {
					releasing = err == nil
					return err
				}
			}
			if r, err := t.Get(prefix); err != nil || (r == nil && prefix != depotpath.Root) {
				return check.PathError("snapshot", prefix, cmp.Or(err, store.ErrNotExist))
			}
			out = store.Snapshot{Name: req.Name, Prefix: prefix, Revision: t.Revision(), Created: t.Now(),
				Writer: req.Writer, Expires: entryrec.UTC(req.Expires)}
			if err := t.SetSnapshot(req.Name, &out); err != nil {
				return err
			}
			return holdReplaced(t, out)
		})
	}
	if err != nil {
		return store.Snapshot{}, err
	}
	return out, nil
}

// holdReplaced keeps as versions held by s the records the transaction
// replaced or removed before s was created (Txn.Replaced): they were the
// tree at s's revision, but the changes that replaced them saw no
// snapshot to retain them for (an earlier call of the same group commit,
// in a store that numbers the changes at the commit).
func holdReplaced(t Txn, s store.Snapshot) error {
	es, err := t.Replaced()
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.Rec.Revision == 0 || e.Rec.Revision > s.Revision || !depotpath.Within(e.Path, s.Prefix) {
			continue
		}
		vs, err := t.Versions(e.Path)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(vs, func(v Version) bool { return v.Rec.Revision == e.Rec.Revision }); i >= 0 {
			if v := vs[i]; !v.Held {
				v.Held = true
				if err := t.SetVersion(v); err != nil {
					return err
				}
			}
			continue
		}
		if sum := entryrec.PresentSum(e.Rec); sum != "" {
			if err := t.Ref(sum, e.Rec.Size); err != nil {
				return err
			}
		}
		if err := t.SetVersion(Version{Path: e.Path, Rec: e.Rec, Held: true}); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSnapshot is store.Versions.DeleteSnapshot: the snapshot's hold
// released (see unhold) and its record deleted, in one transaction, or in
// several when the release is larger than one commit holds.
func (w Writes) DeleteSnapshot(ctx context.Context, name string) error {
	if err := check.SnapshotName(name); err != nil {
		return err
	}
	budget := -1 // ReleaseBudget, halved for each commit refused as too large
	for started := false; ; started = true {
		done := false
		err := w.C.Update(ctx, func(t Txn) error {
			if budget < 0 {
				budget = ReleaseBudget(t.Limits())
			}
			snaps, err := t.Snapshots()
			if err != nil {
				return err
			}
			i := find(snaps, name)
			switch {
			case i < 0 && started:
				done = true // another host finished the release
				return nil
			case i < 0:
				return fmt.Errorf("snapshot %s: %w", name, store.ErrNotExist)
			}
			done, err = unhold(t, snaps, i, budget)
			return err
		})
		if errors.Is(err, store.ErrBatchLimit) && budget > 1 {
			budget /= 2
			continue
		}
		if err != nil || done {
			return err
		}
	}
}

// ReleaseBudget is how many held versions one commit of a snapshot's
// release frees under limits l: a quarter of l.MaxRecords (freeing one
// writes a few records), and at least one, however small the bound;
// 0 (all of them) in a store whose commits have no bound.
func ReleaseBudget(l check.Limits) int {
	if l.MaxRecords <= 0 {
		return 0
	}
	return max(1, l.MaxRecords/4)
}

// ExpireSnapshots releases the snapshots whose Expires has passed by the
// transaction's clock, as DeleteSnapshot would, at most budget versions
// of each (0: no bound; see ReleaseBudget), and returns how many it
// deleted; one whose release needs more commits is continued by the next
// call.
func ExpireSnapshots(t Txn, budget int) (int, error) {
	snaps, err := t.Snapshots()
	if err != nil {
		return 0, err
	}
	n := 0
	for i := 0; i < len(snaps); {
		if e := snaps[i].Expires; e.IsZero() || e.After(t.Now()) {
			i++
			continue
		}
		done, err := unhold(t, snaps, i, budget)
		if err != nil || !done {
			return n, err
		}
		snaps = slices.Delete(snaps, i, i+1)
		n++
	}
	return n, nil
}

// SnapshotsDue reports whether one of snaps has expired by now.
func SnapshotsDue(snaps []store.Snapshot, now time.Time) bool {
	return len(Holding(snaps, now)) < len(snaps)
}

// unhold releases what snaps[i] held, at most budget versions (see
// ReleaseBudget), and deletes its record with the last of it (done).
// Until then the record stays, expired: it holds nothing new, and the
// expiry sweep finishes a release that a stopped host left.
func unhold(t Txn, snaps []store.Snapshot, i, budget int) (done bool, err error) {
	s := snaps[i]
	rest := Holding(slices.Delete(slices.Clone(snaps), i, i+1), t.Now())
	more, err := release(t, s, rest, budget)
	switch {
	case err != nil:
		return false, err
	case !more:
		if err := releaseDirTimes(t, s.Prefix, rest); err != nil {
			return false, err
		}
		return true, t.SetSnapshot(s.Name, nil)
	case s.Expires.IsZero() || s.Expires.After(t.Now()):
		s.Expires = t.Now()
		return false, t.SetSnapshot(s.Name, &s)
	}
	return false, nil
}

func find(snaps []store.Snapshot, name string) int {
	return slices.IndexFunc(snaps, func(s store.Snapshot) bool { return s.Name == name })
}

// Holds is what eviction asks of the snapshots: whether content a live
// file uses is held (the file is as a snapshot saw it, so the snapshot
// needs its bytes), and, when a write cannot fit, which snapshots to
// delete.
type Holds struct {
	snaps []store.Snapshot
	bytes map[string]int64 // bytes held, by snapshot name, as found
}

// NewHolds reads the snapshots of t.
func NewHolds(t Txn) (*Holds, error) {
	snaps, err := t.Snapshots()
	return &Holds{snaps: Holding(snaps, t.Now()), bytes: map[string]int64{}}, err
}

// Any reports whether there is a snapshot at all.
func (h *Holds) Any() bool { return len(h.snaps) > 0 }

// Held reports whether a snapshot holds the live file r at p, whose
// content has size bytes, counting them against the snapshot.
func (h *Holds) Held(p string, r *entryrec.Record, size int64) bool {
	if len(h.snaps) == 0 {
		return false
	}
	s := holder(h.snaps, p, r.Revision)
	if s != nil {
		h.bytes[s.Name] += size
	}
	return s != nil
}

// Limit makes err, a store.ErrLimit from eviction, a *store.RoomError
// naming every snapshot, those holding the most bytes first: the held
// versions under each, and the live content Held found. A server shows a
// caller only those it may read. Other errors, and a store without
// snapshots, keep err as it is.
func (h *Holds) Limit(t Txn, err error) error {
	if len(h.snaps) == 0 {
		return err
	}
	for _, s := range h.snaps {
		vs, verr := t.HeldWithin(s.Prefix)
		if verr != nil {
			return err
		}
		seen := map[string]bool{}
		for _, v := range vs {
			if sum := entryrec.PresentSum(v.Rec); sum != "" && v.Visible(s.Revision) && !seen[sum] {
				seen[sum] = true
				h.bytes[s.Name] += v.Rec.Size
			}
		}
	}
	held := make([]store.SnapshotHold, 0, len(h.snaps))
	for _, s := range h.snaps {
		held = append(held, store.SnapshotHold{Name: s.Name, Prefix: s.Prefix, Bytes: h.bytes[s.Name]})
	}
	slices.SortStableFunc(held, func(a, b store.SnapshotHold) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return &store.RoomError{Err: err, Held: held}
}
