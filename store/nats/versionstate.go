package nats

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// versionRecord is a retained version as stored at its key: the entry
// record, Rev the revision that wrote it, Until the one that replaced
// it.
type versionRecord struct {
	record
	Until uint64 `json:"un"`
	Held  bool   `json:"hd,omitzero"`
}

// versionKey is the key of p's version written at rev; snapKey that of
// the snapshot name (hashed: a name may hold dots, which split subjects).
func versionKey(p string, rev uint64) string {
	return "v." + hashHex(p) + "." + strconv.FormatUint(rev, 10)
}
func snapKey(name string) string { return "s." + hashHex(name) }

// vstate is the part of the state that holds retained versions and
// snapshots, with the indexes reads and eviction use.
type vstate struct {
	versions  map[string][]*rules.Version // path → versions, oldest first
	vkeys     map[string]*rules.Version   // version key → version
	vheld     map[string]*rules.Version   // version key → version, of the held ones
	vchildren map[string]map[string]bool  // directory → children with versions
	vrefs     map[string]map[string]bool  // content sha256 → keys of versions using it
	snaps     map[string]store.Snapshot   // name → snapshot
	snapNames map[string]string           // snapshot key → name
	dirTimes  map[string][]rules.DirTime  // path → directory times kept for snapshots, oldest first
	dtKeys    map[string]rules.DirTime    // directory times key → times
	held      int64                       // bytes only versions use
}

func newVState() vstate {
	return vstate{
		versions: map[string][]*rules.Version{}, vkeys: map[string]*rules.Version{}, vheld: map[string]*rules.Version{},
		vchildren: map[string]map[string]bool{}, vrefs: map[string]map[string]bool{},
		snaps: map[string]store.Snapshot{}, snapNames: map[string]string{},
		dirTimes: map[string][]rules.DirTime{}, dtKeys: map[string]rules.DirTime{},
	}
}

// applyVersion applies a version message.
func (st *state) applyVersion(key string, data []byte, del bool) error {
	if old := st.vkeys[key]; old != nil {
		st.quota.Charge(st.charged, old.Path, -quota.Version(old.Rec, old.Held))
		delete(st.vkeys, key)
		delete(st.vheld, key)
		vs := slices.DeleteFunc(st.versions[old.Path], func(v *rules.Version) bool { return v == old })
		st.versions[old.Path] = vs
		if len(vs) == 0 {
			delete(st.versions, old.Path)
			dir, _ := depotpath.Split(old.Path)
			removeFrom(st.vchildren, dir, old.Path)
		}
		if sum := entryrec.PresentSum(old.Rec); sum != "" {
			removeFrom(st.vrefs, sum, key)
		}
	}
	vr, err := decodeUnless[versionRecord](del, key, data)
	if vr == nil {
		return err
	}
	if err := st.addr.openRecord(&vr.Record); err != nil {
		return fmt.Errorf("version %s: %w", key, err)
	}
	vr.Record.Revision = vr.Rev
	st.addVersion(key, &rules.Version{Path: vr.Path, Rec: &vr.Record, Until: vr.Until, Held: vr.Held})
	return nil
}

// addVersion adds the retained version v at key, which holds none, with
// its indexes.
func (st *state) addVersion(key string, v *rules.Version) {
	st.vkeys[key] = v
	st.quota.Charge(st.charged, v.Path, quota.Version(v.Rec, v.Held))
	if v.Held {
		st.vheld[key] = v
	}
	vs := append(st.versions[v.Path], v)
	slices.SortFunc(vs, func(a, b *rules.Version) int { return cmp.Compare(a.Rec.Revision, b.Rec.Revision) })
	st.versions[v.Path] = vs
	dir, _ := depotpath.Split(v.Path)
	addTo(st.vchildren, dir, v.Path)
	if sum := entryrec.PresentSum(v.Rec); sum != "" {
		addTo(st.vrefs, sum, key)
	}
}

// applySnapshot applies a snapshot message.
func (st *state) applySnapshot(key string, data []byte, del bool) error {
	delete(st.snaps, st.snapNames[key])
	delete(st.snapNames, key)
	s, err := decodeUnless[store.Snapshot](del, key, data)
	if s == nil {
		return err
	}
	st.addSnapshot(key, *s)
	return nil
}

// addSnapshot adds snapshot s at key, which holds none.
func (st *state) addSnapshot(key string, s store.Snapshot) {
	st.snaps[s.Name], st.snapNames[key] = s, s.Name
}

// at returns the record of p at revision rev (see rules.At).
func (st *state) at(p string, rev uint64) *entryrec.Record {
	r, _ := st.atUntil(p, rev)
	return r
}

// atUntil is at, with the revision that replaced the record (liveUntil
// for the live one).
func (st *state) atUntil(p string, rev uint64) (*entryrec.Record, uint64) {
	if r := st.entries[p]; r != nil && r.Revision <= rev {
		return r.rec(), liveUntil
	}
	vs := st.versions[p]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].Visible(rev) {
			return vs[i].Rec, vs[i].Until
		}
	}
	return nil, 0
}

// nversions counts the retained versions.
func (st *state) nversions() int64 { return int64(len(st.vkeys)) }
