package nats

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// dirTimeRecord is a rules.DirTime as stored at its key: the times a
// directory had before they moved at the revision the key names.
type dirTimeRecord struct {
	Path    string    `json:"p"`
	MTime   time.Time `json:"mt"`
	Updated time.Time `json:"ct"`
}

// dirTimeKey is the key of dir's times before they moved at revision at.
func dirTimeKey(dir string, at uint64) string {
	return "t." + hashHex(dir) + "." + strconv.FormatUint(at, 10)
}

// applyDirTime applies a directory times message.
func (st *state) applyDirTime(key string, data []byte, del bool) error {
	if old, ok := st.dtKeys[key]; ok {
		delete(st.dtKeys, key)
		ts := slices.DeleteFunc(st.dirTimes[old.Path], func(d rules.DirTime) bool { return d.At == old.At })
		if len(ts) == 0 {
			delete(st.dirTimes, old.Path)
		} else {
			st.dirTimes[old.Path] = ts
		}
	}
	r, err := decodeUnless[dirTimeRecord](del, key, data)
	if r == nil {
		return err
	}
	at, err := strconv.ParseUint(key[strings.LastIndexByte(key, '.')+1:], 10, 64)
	if err != nil {
		return err
	}
	st.addDirTime(key, rules.DirTime{Path: r.Path, At: at, MTime: r.MTime, Updated: r.Updated})
	return nil
}

// addDirTime adds the directory times d at key, which holds none.
func (st *state) addDirTime(key string, d rules.DirTime) {
	st.dtKeys[key] = d
	ts := append(st.dirTimes[d.Path], d)
	slices.SortFunc(ts, func(a, b rules.DirTime) int { return cmp.Compare(a.At, b.At) })
	st.dirTimes[d.Path] = ts
}

// dirTimeAt sets the times of e, a directory's entry at revision rev whose
// record until replaced, to those it had at rev (rules.DirTimeAt).
func (st *state) dirTimeAt(e *store.Entry, rev, until uint64) {
	if e.IsDir() {
		rules.DirTimeAt(e, st.dirTimes[e.Path], rev, until)
	}
}

// keepDirTime adds, to the transaction's messages, dir's times before
// they move when a snapshot saw them (rules.KeepDirTime): since the later
// of rev, the revision of its record, and its newest DirTime. They moved
// at the batch's first revision, above every snapshot's.
func (t *txn) keepDirTime(add func(string, any), dir string, rev uint64, mtime, ctime time.Time) {
	snaps, _ := t.Snapshots() // never fails
	if len(snaps) == 0 {
		return
	}
	since := rev
	if ts := t.st.dirTimes[dir]; len(ts) > 0 {
		since = max(since, ts[len(ts)-1].At)
	}
	at := t.base + 1
	if rules.KeepDirTime(rules.Holding(snaps, t.now), dir, since, at) {
		add(dirTimeKey(dir, at), dirTimeRecord{Path: dir, MTime: mtime, Updated: ctime})
	}
}

// DirTimes is rules.Txn.DirTimes.
func (t *txn) DirTimes(dir string) ([]rules.DirTime, error) {
	var out []rules.DirTime
	for p, ts := range t.st.dirTimes {
		if !depotpath.Within(p, dir) {
			continue
		}
		for _, d := range ts {
			if !slices.Contains(t.dtDrop, dirTimeKey(d.Path, d.At)) {
				out = append(out, d)
			}
		}
	}
	slices.SortFunc(out, func(a, b rules.DirTime) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), cmp.Compare(a.At, b.At))
	})
	return out, nil
}

// DropDirTime is rules.Txn.DropDirTime.
func (t *txn) DropDirTime(d rules.DirTime) error {
	t.dtDrop = append(t.dtDrop, dirTimeKey(d.Path, d.At))
	return nil
}

// liveUntil is the until of a live record (see rules.DirTimeAt).
const liveUntil = math.MaxUint64
