package bolt

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// keyRootTime, in the meta bucket, holds the root's mtime (encoded as in a
// record): the root has no record of its own.
var keyRootTime = []byte("roottime")

// touchDirs sets the mtime and ctime (Updated) of every directory touched
// by the transaction, and still present, to the transaction's time. The
// directory keeps its revision and gets no event of its own: the events of
// the entries created or removed in it say that it changed. Each directory
// is written once per transaction, however many entries changed in it.
// Times a snapshot saw are kept first (keepDirTime).
func (w *wtx) touchDirs() error {
	for dir := range w.Touched {
		if dir == depotpath.Root {
			root, err := statRoot(w.meta)
			if err != nil {
				return err
			}
			if err := w.keepDirTime(dir, 0, root.MTime, root.Updated); err != nil {
				return err
			}
			if err := w.meta.Put(keyRootTime, appendTime(nil, w.now)); err != nil {
				return err
			}
			continue
		}
		r, err := getEntry(w.tree, dir, w.s.sealer)
		if err != nil {
			return err
		}
		if r == nil || r.Kind != store.KindDir || (r.MTime.Equal(w.now) && r.Updated.Equal(w.now)) {
			continue
		}
		if err := w.keepDirTime(dir, r.Revision, r.MTime, r.Updated); err != nil {
			return err
		}
		r.MTime, r.Updated = w.now, w.now
		v, err := encodeRecord(r, w.s.sealer)
		if err != nil {
			return err
		}
		if err := w.tree.Put(treeKey(dir), v); err != nil {
			return err
		}
	}
	return nil
}

// statRoot returns the root's entry, with its times: zero until an entry
// is first created in or removed from it.
func statRoot(meta *bbolt.Bucket) (store.Entry, error) {
	e := entryrec.RootEntry()
	v := meta.Get(keyRootTime)
	if v == nil {
		return e, nil
	}
	d := decoder{b: v}
	t := d.time()
	if d.err != nil {
		return store.Entry{}, d.err
	}
	e.MTime, e.Updated = t, t
	return e, nil
}

// keepDirTime writes dir's times before they move, mtime and ctime, as a
// rules.DirTime at the transaction's first revision when a snapshot saw
// them (rules.KeepDirTime): since the later of rev, the revision of its
// record, and its newest DirTime. One read of the index and of the
// snapshots: a directory's times move at most once per transaction.
func (w *wtx) keepDirTime(dir string, rev uint64, mtime, ctime time.Time) error {
	snaps, err := w.Snapshots()
	if err != nil || len(snaps) == 0 {
		return err
	}
	b := w.tx.Bucket(bucketDirTimes)
	at := w.base + 1
	key := versionKey(dir, at)
	prefix := key[:len(key)-8]
	c := b.Cursor()
	k, _ := c.Seek(key)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	since := rev
	if k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 {
		since = max(since, u64(k[len(prefix):]))
	}
	if !rules.KeepDirTime(rules.Holding(snaps, w.now), dir, since, at) {
		return nil
	}
	return b.Put(key, appendTime(appendTime(nil, mtime), ctime))
}

// DirTimes is rules.Txn.DirTimes.
func (w *wtx) DirTimes(dir string) ([]rules.DirTime, error) {
	var out []rules.DirTime
	err := scanWithin(w.tx.Bucket(bucketDirTimes), dir, func(k, v []byte) error {
		d, err := decodeDirTime(k, v)
		out = append(out, d)
		return err
	})
	// scanWithin reads dir's own first, then its children's, then the
	// rest below it: by path as the rules ask.
	slices.SortStableFunc(out, func(a, b rules.DirTime) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

// DropDirTime is rules.Txn.DropDirTime.
func (w *wtx) DropDirTime(d rules.DirTime) error {
	return w.tx.Bucket(bucketDirTimes).Delete(versionKey(d.Path, d.At))
}

func decodeDirTime(k, v []byte) (rules.DirTime, error) {
	if len(k) < 9 {
		return rules.DirTime{}, errCorrupt
	}
	d := decoder{b: v}
	out := rules.DirTime{Path: keyPath(k[:len(k)-9]), At: u64(k[len(k)-8:])}
	out.MTime, out.Updated = d.time(), d.time()
	return out, d.err
}

// dirTimeAt sets the times of e, a directory's entry at revision rev
// whose record until replaced, to those it had at rev (rules.DirTimeAt).
// The live tree (rev math.MaxUint64) and files have none to read.
func dirTimeAt(tx *bbolt.Tx, e *store.Entry, rev, until uint64) error {
	if rev == math.MaxUint64 || !e.IsDir() {
		return nil // before the bucket lookup: a listing calls this per entry
	}
	b := tx.Bucket(bucketDirTimes)
	if b == nil {
		return nil
	}
	key := versionKey(e.Path, rev+1)
	prefix := key[:len(key)-8]
	k, v := b.Cursor().Seek(key)
	if k == nil || !bytes.HasPrefix(k, prefix) || len(k) != len(prefix)+8 {
		return nil
	}
	d, err := decodeDirTime(k, v)
	if err != nil {
		return err
	}
	rules.DirTimeAt(e, []rules.DirTime{d}, rev, until)
	return nil
}
