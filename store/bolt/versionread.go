package bolt

import (
	"bytes"
	"context"
	"math"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// recordAt returns the record of p at revision rev (see rules.At): the
// newest version written by rev when it was not replaced by then, else
// the live record when it is that old; nil when there is none. A visible
// version means the live record is newer, so it is read only when there
// is none: a walk at a revision reads one record per path, as a live
// walk does. until is the revision that replaced the record
// (math.MaxUint64 for the live one).
func recordAt(tx *bbolt.Tx, p string, rev uint64, sl sealer) (r *record, until uint64, err error) {
	if rev == math.MaxUint64 {
		r, err := getEntry(tx.Bucket(bucketTree), p, sl) // the live tree: no version is visible
		return r, math.MaxUint64, err
	}
	key := versionKey(p, rev+1)
	prefix := key[:len(key)-8]
	c := tx.Bucket(bucketVersions).Cursor()
	k, _ := c.Seek(key)
	var v []byte
	if k == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 && versionUntil(v) > rev {
		ver, err := decodeVersion(k, v, sl)
		return ver.Rec, ver.Until, err
	}
	r, err = getEntry(tx.Bucket(bucketTree), p, sl)
	if err != nil || r == nil || r.Revision > rev {
		return nil, 0, err
	}
	return r, math.MaxUint64, nil
}

// StatAt is Stat of the tree as of revision rev (see store.Versions). It
// is safe for concurrent use.
func (s *Store) StatAt(ctx context.Context, path string, rev uint64) (store.Entry, error) {
	var e store.Entry
	err := s.view(ctx, "stat", path, func(tx *bbolt.Tx) error {
		var err error
		e, err = entryAt(tx, path, rev, s.sealer)
		return err
	})
	return e, err
}

// ReadDirAt is ReadDir of the tree as of revision rev: the live children
// that old and the versions visible at rev, sorted by name. It is safe for
// concurrent use.
func (s *Store) ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error) {
	var out []store.Entry
	err := s.view(ctx, "readdir", dir, func(tx *bbolt.Tx) error {
		e, err := entryAt(tx, dir, rev, s.sealer)
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return store.ErrNotDir
		}
		// The versions visible at rev first (none in the live tree), then
		// the live entries merged in name order: a name with a visible
		// version has no live entry that old, which is skipped undecoded.
		prefix := dirPrefix(dir)
		var vis []store.Entry
		var names [][]byte         // valid while tx is
		if rev != math.MaxUint64 { // the live tree shows no version; an older file has no versions bucket
			c := tx.Bucket(bucketVersions).Cursor()
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				if u64(k[len(k)-8:]) > rev || versionUntil(v) <= rev {
					continue
				}
				var r record
				if len(v) < versionHead {
					return errCorrupt
				}
				if err := decodeInto(&r, v[versionHead:], s.sealer); err != nil {
					return err
				}
				e := r.Entry(keyPath(k[:len(k)-9]))
				if err := dirTimeAt(tx, &e, rev, versionUntil(v)); err != nil {
					return err
				}
				vis = append(vis, e)
				names = append(names, k[len(prefix):len(k)-9])
			}
		}
		j := 0
		c := tx.Bucket(bucketTree).Cursor()
		// Sized once: a directory of a thousand files would otherwise
		// copy its entries ten times as the slice grows; so is the
		// listing's string.
		n, live, size := len(vis), 0, 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			n++
			live++
			size += spelled(dir, len(k)-len(prefix), v)
		}
		out = make([]store.Entry, 0, n)
		strs := map[string]string{}
		var sums [2]hash // the hashes of one record, opened
		l := newListing(live, size)
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			name := k[len(prefix):]
			for ; j < len(names) && bytes.Compare(names[j], name) < 0; j++ {
				out = append(out, vis[j])
			}
			if j < len(names) && bytes.Equal(names[j], name) {
				out = append(out, vis[j])
				j++
				continue
			}
			if len(out)%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var r record
			sum, declared, err := decodeListed(&r, v, strs, s.sealer, &sums)
			if err != nil {
				return err
			}
			if r.Revision <= rev {
				l.add(len(out), dir, name, sum, declared)
				out = append(out, r.Entry(""))
			}
		}
		out = append(out, vis[j:]...)
		l.spell(out)
		// dirTimeAt needs the paths; the live tree's directories show
		// their own times.
		if rev != math.MaxUint64 {
			for _, ref := range l.refs {
				if err := dirTimeAt(tx, &out[ref.i], rev, math.MaxUint64); err != nil {
					return err
				}
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// History returns path's live entry and retained versions, newest first
// (see store.Versions). It is safe for concurrent use.
func (s *Store) History(ctx context.Context, path string) ([]store.Entry, error) {
	var out []store.Entry
	err := s.view(ctx, "history", path, func(tx *bbolt.Tx) error {
		r, err := getEntry(tx.Bucket(bucketTree), path, s.sealer)
		if err != nil {
			return err
		}
		if r != nil {
			out = append(out, r.Entry(path))
		}
		vs, err := versionsOf(tx.Bucket(bucketVersions), path, s.sealer)
		for _, v := range vs {
			out = append(out, v.Entry())
		}
		if err == nil && len(out) == 0 {
			err = store.ErrNotExist
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Snapshots lists the snapshots by name, less those expired by the
// store's clock (see rules.Holding). It is safe for concurrent use.
func (s *Store) Snapshots(ctx context.Context) ([]store.Snapshot, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var out []store.Snapshot
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		out, err = readSnapshots(tx)
		return err
	})
	return rules.Holding(out, s.now()), dbErr(err)
}
