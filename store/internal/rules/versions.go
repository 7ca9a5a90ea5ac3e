package rules

import (
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Version is a record a change replaced or removed, kept while something
// retains it: a snapshot that holds it (Held), or the path's history
// (check.Limits.KeepVersions). Its content is referenced like a live
// file's; a held version's content is never evicted.
type Version struct {
	Path  string
	Rec   *entryrec.Record // Rec.Revision is the revision that wrote it
	Until uint64           // the revision that replaced or removed it; 0 until the commit assigns it (nats)
	Held  bool
}

// Entry is the entry v shows.
func (v Version) Entry() store.Entry { return v.Rec.Entry(v.Path) }

// Visible reports whether v was the path's record at revision rev.
func (v Version) Visible(rev uint64) bool {
	return v.Rec.Revision <= rev && (v.Until == 0 || rev < v.Until)
}

// At returns the record of p at revision rev: the live record r when its
// revision is at most rev, else the retained version visible at rev; nil
// when there is none (never written by then, removed, or no longer
// retained).
func At(t Txn, p string, rev uint64) (*entryrec.Record, error) {
	r, err := t.Get(p)
	if err != nil || (r != nil && r.Revision != 0 && r.Revision <= rev) {
		return r, err
	}
	vs, err := t.Versions(p)
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		if v.Visible(rev) {
			return v.Rec, nil
		}
	}
	return nil, nil
}

// holder returns the first of snaps that holds the record of p written at
// revision rev, which the transaction replaces: one whose tree below its
// prefix is as of a revision at rev or later.
func holder(snaps []store.Snapshot, p string, rev uint64) *store.Snapshot {
	for i := range snaps {
		if s := &snaps[i]; rev != 0 && rev <= s.Revision && depotpath.Within(p, s.Prefix) {
			return s
		}
	}
	return nil
}

// historic reports whether a version of r belongs in its path's history:
// a present file, whose content the change replaced or removed. A change
// of metadata alone, a directory or a placeholder is kept only while a
// snapshot holds it.
func historic(r *entryrec.Record) bool { return entryrec.PresentSum(r) != "" }

// retain keeps old, the record of p the transaction just replaced with
// next (nil: removed), as a version when a snapshot holds it or, with
// history set and new content or none at p, as history; then trims p's
// history to check.Limits.KeepVersions.
func retain(t Txn, p string, old, next *entryrec.Record, history bool) error {
	if old == nil || t.Fresh(old) {
		// Nothing visible replaced (a new path, or one written earlier
		// in the same call): still a change of p, where a KeepVersions
		// lowered since its versions were kept (a removed file's)
		// takes effect.
		return trim(t, p, t.Limits().KeepVersions)
	}
	snaps, err := t.Snapshots()
	if err != nil {
		return err
	}
	held := holder(Holding(snaps, t.Now()), p, old.Revision) != nil
	keep := t.Limits().KeepVersions
	history = history && keep > 0 && historic(old) && entryrec.PresentSum(next) != old.SHA256
	if !held && !history {
		// Trimmed all the same: with KeepVersions lowered since the
		// versions were kept (to 0 above all), the path's next change is
		// where the lower number takes effect.
		return trim(t, p, keep)
	}
	if sum := entryrec.PresentSum(old); sum != "" {
		if err := t.Ref(sum, old.Size); err != nil {
			return err
		}
	}
	if err := t.SetVersion(Version{Path: p, Rec: old, Held: held}); err != nil {
		return err
	}
	return trim(t, p, keep)
}

// trim drops p's versions that nothing retains: held ones stay, and of
// the others the newest keep present files.
func trim(t Txn, p string, keep int) error {
	vs, err := t.Versions(p)
	if err != nil {
		return err
	}
	n := 0
	for _, v := range vs {
		if v.Held {
			continue
		}
		if historic(v.Rec) && n < keep {
			n++
			continue
		}
		if err := drop(t, v); err != nil {
			return err
		}
	}
	return nil
}

// drop deletes version v and releases its content.
func drop(t Txn, v Version) error {
	if err := t.DropVersion(v); err != nil {
		return err
	}
	if sum := entryrec.PresentSum(v.Rec); sum != "" {
		return t.Unref(sum)
	}
	return nil
}

// release ends snap's hold: the versions it held that no snapshot of rest
// holds become history, trimmed as any is; at most budget of them (0: no
// bound), more reporting that some are left.
func release(t Txn, snap store.Snapshot, rest []store.Snapshot, budget int) (more bool, err error) {
	held, err := t.HeldWithin(snap.Prefix)
	if err != nil {
		return false, err
	}
	trimmed := map[string]bool{}
	n := 0
	for _, v := range held {
		if !v.Visible(snap.Revision) || anyVisible(rest, v) {
			continue // not snap's, or held by another
		}
		if n++; budget > 0 && n > budget {
			return true, nil
		}
		v.Held = false
		if err := t.SetVersion(v); err != nil {
			return false, err
		}
		if !trimmed[v.Path] {
			trimmed[v.Path] = true
			if err := trim(t, v.Path, t.Limits().KeepVersions); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// Holding returns the snapshots of snaps that hold versions at now, by
// the store's clock: an expired one is being released, and a deleted one
// whose release takes several commits expired at the first. They are the
// snapshots a store lists (store.Versions.Snapshots): one is gone from
// the instant it expires or its deletion starts, not once its release is
// done, since from that instant it holds nothing new.
func Holding(snaps []store.Snapshot, now time.Time) []store.Snapshot {
	return slices.DeleteFunc(slices.Clone(snaps), func(s store.Snapshot) bool {
		return !s.Expires.IsZero() && !s.Expires.After(now)
	})
}

// anyVisible reports whether a snapshot of snaps covering v's path sees
// v: its revision lies in v's life.
func anyVisible(snaps []store.Snapshot, v Version) bool {
	for _, s := range snaps {
		if depotpath.Within(v.Path, s.Prefix) && v.Visible(s.Revision) {
			return true
		}
	}
	return false
}
