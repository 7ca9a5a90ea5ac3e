package nats

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// version returns the version at key as of the transaction, nil when
// absent.
func (t *txn) version(key string) *rules.Version {
	if v := t.vers.get(key, t.st.vkeys); v != nil {
		c := *v
		return &c
	}
	return nil
}

// Versions returns p's versions as of the transaction, newest first.
func (t *txn) Versions(p string) ([]rules.Version, error) {
	var out []rules.Version
	for _, v := range t.st.versions[p] {
		if cur := t.version(versionKey(p, v.Rec.Revision)); cur != nil {
			out = append(out, *cur)
		}
	}
	for k, v := range t.vers.m {
		if v != nil && v.Path == p && t.st.vkeys[k] == nil {
			out = append(out, *v)
		}
	}
	slices.SortFunc(out, func(a, b rules.Version) int { return cmp.Compare(b.Rec.Revision, a.Rec.Revision) })
	return out, nil
}

// HeldWithin returns the held versions of dir and below, as of the
// transaction: it reads the held ones alone (a snapshot's release runs
// it once a commit), not every retained version.
func (t *txn) HeldWithin(dir string) ([]rules.Version, error) {
	var out []rules.Version
	for k, v := range t.st.vheld {
		if _, changed := t.vers.m[k]; !changed && v.Held && depotpath.Within(v.Path, dir) {
			out = append(out, *v)
		}
	}
	for _, v := range t.vers.m {
		if v != nil && v.Held && depotpath.Within(v.Path, dir) {
			out = append(out, *v)
		}
	}
	return out, nil
}

// SetVersion writes version v; a new one's Until is the revision
// messages gives the change of its path.
func (t *txn) SetVersion(v rules.Version) error {
	key := versionKey(v.Path, v.Rec.Revision)
	old := t.version(key)
	if old != nil {
		v.Until = old.Until
	}
	if err := t.countVersion(old, &v); err != nil {
		return err
	}
	t.vers.set(key, &v)
	return nil
}

// DropVersion deletes version v.
func (t *txn) DropVersion(v rules.Version) error {
	key := versionKey(v.Path, v.Rec.Revision)
	if err := t.countVersion(t.version(key), nil); err != nil {
		return err
	}
	t.vers.set(key, nil)
	return nil
}

// countVersion keeps the version and pin counts of the content of a
// version changing from old to v (either nil: absent) in step.
func (t *txn) countVersion(old, v *rules.Version) error {
	for i, ver := range []*rules.Version{old, v} {
		sum := ""
		if ver != nil {
			sum = entryrec.PresentSum(ver.Rec)
		}
		if sum == "" {
			continue
		}
		b := t.blob(sum)
		if b == nil {
			return fmt.Errorf("corrupt store: version %s@%d uses missing content %s", ver.Path, ver.Rec.Revision, sum)
		}
		d := uint64(1)
		if i == 0 {
			d = ^uint64(0) // -1
		}
		b.Versions += d
		if ver.Held {
			b.Pins += d
		}
		t.setBlob(sum, b)
	}
	return nil
}

// Snapshots are the snapshots as of the transaction, by name. Every
// write asks: with no snapshot anywhere it costs nothing.
func (t *txn) Snapshots() ([]store.Snapshot, error) {
	if len(t.st.snaps) == 0 && len(t.snaps.m) == 0 {
		return nil, nil
	}
	var out []store.Snapshot
	for name, s := range t.st.snaps {
		if _, changed := t.snaps.m[name]; !changed {
			out = append(out, s)
		}
	}
	for _, s := range t.snaps.m {
		if s != nil {
			out = append(out, *s)
		}
	}
	slices.SortFunc(out, func(a, b store.Snapshot) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// SetSnapshot writes or deletes a snapshot.
func (t *txn) SetSnapshot(name string, s *store.Snapshot) error {
	t.snaps.set(name, s)
	return nil
}

// Revision is the revision of the last entry change the host applied:
// the transaction's own changes are numbered only by messages.
func (t *txn) Revision() uint64 { return t.st.entryRev }

// Replaced returns the committed records of the paths the transaction
// changed so far.
func (t *txn) Replaced() ([]rules.Entry, error) {
	var out []rules.Entry
	for _, p := range t.order {
		if r := t.st.entries[p]; r != nil && t.entries[p] != r {
			out = append(out, rules.Entry{Path: p, Rec: r.rec()})
		}
	}
	return out, nil
}

// Fresh reports whether r was written in this transaction: it has no
// revision until messages. A group commit never lets one call change a
// path an earlier call of the group changed (see commitGroup), so such a
// record is the running call's.
func (t *txn) Fresh(r *entryrec.Record) bool { return r.Revision == 0 }

// versionMessages adds the transaction's snapshots and versions to its
// batch; seq holds the sequence of each path's entry message, which a
// new version's Until becomes.
func (t *txn) versionMessages(add func(key string, v any), seq map[string]uint64) error {
	for _, name := range slices.Sorted(maps.Keys(t.snaps.m)) {
		if s := t.snaps.m[name]; s != nil {
			add(snapKey(name), s)
		} else if _, ok := t.st.snaps[name]; ok {
			add(snapKey(name), nil)
		}
	}
	for _, k := range t.vers.keys {
		vp := t.vers.m[k]
		if vp == nil {
			if t.st.vkeys[k] != nil {
				add(k, nil)
			}
			continue
		}
		v := *vp
		if v.Until == 0 {
			if v.Until = seq[v.Path]; v.Until == 0 {
				return fmt.Errorf("corrupt transaction: version %s@%d replaced by no change", v.Path, v.Rec.Revision)
			}
		}
		vr := versionRecord{record: record{Path: v.Path, Record: *v.Rec, Rev: v.Rec.Revision}, Until: v.Until, Held: v.Held}
		add(k, &vr)
	}
	return nil
}
