package bolt

import (
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
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
func (w *wtx) touchDirs() error {
	for dir := range w.Touched {
		if dir == depotpath.Root {
			if err := w.meta.Put(keyRootTime, appendTime(nil, w.now)); err != nil {
				return err
			}
			continue
		}
		r, err := getEntry(w.tree, dir)
		if err != nil {
			return err
		}
		if r == nil || r.Kind != store.KindDir || (r.MTime.Equal(w.now) && r.Updated.Equal(w.now)) {
			continue
		}
		r.MTime, r.Updated = w.now, w.now
		v, err := encodeRecord(r)
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
