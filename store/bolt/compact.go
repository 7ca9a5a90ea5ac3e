package bolt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/bbolt"
)

// compactTxBytes bounds the keys and values copied per transaction while
// compacting: bbolt keeps a transaction's dirty pages in memory.
const compactTxBytes = 64 << 20

// CompactResult is what Compact did: the file's size before and after.
type CompactResult struct {
	Before, After int64
}

// Compact rewrites the database at path offline: it copies every bucket,
// key and value into a new file with full pages (bbolt.Compact), checks
// that every bucket holds as many keys as before, and renames the new file
// over the old one. Pages freed by deletions and overwrites are not copied,
// so the file shrinks to about the live data. The database must not be open
// anywhere: a running depotfs is refused with a *LockedError. On an error
// the database is left as it was.
func Compact(path string) (CompactResult, error) {
	var res CompactResult
	src, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return res, fmt.Errorf("bolt: compact: %w", err)
	}
	defer lock.Close()
	defer src.Close()
	fi, err := os.Stat(path)
	if err != nil {
		return res, fmt.Errorf("bolt: compact: %w", err)
	}
	res.Before = fi.Size()

	tmp := path + ".compact"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("bolt: compact: %w", err)
	}
	// No fsync per transaction: nothing refers to the new file until the
	// rename, and one Sync before it makes the whole copy durable.
	dst, err := bbolt.Open(tmp, fi.Mode().Perm(), &bbolt.Options{NoSync: true})
	if err != nil {
		return res, fmt.Errorf("bolt: compact: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			dst.Close()
			os.Remove(tmp)
		}
	}()
	if err := bbolt.Compact(dst, src, compactTxBytes); err != nil {
		return res, fmt.Errorf("bolt: compact %s: %w", path, err)
	}
	if err := sameKeys(src, dst); err != nil {
		return res, fmt.Errorf("bolt: compact %s: the copy differs, database left as it was: %w", path, err)
	}
	var used int64
	if err := dst.View(func(tx *bbolt.Tx) error { used = tx.Size(); return nil }); err != nil {
		return res, fmt.Errorf("bolt: compact %s: %w", path, err)
	}
	if err := dst.Close(); err != nil {
		return res, fmt.Errorf("bolt: compact %s: %w", path, err)
	}
	// bbolt grew the file ahead of its pages (AllocSize); cut it to the
	// pages in use, which bbolt grows again when it needs to. The Sync also
	// makes the whole copy durable before the rename.
	if err := truncateSync(tmp, used); err != nil {
		return res, fmt.Errorf("bolt: compact %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return res, fmt.Errorf("bolt: compact %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync() // make the rename durable; the data already is
		d.Close()
	}
	if fi, err = os.Stat(path); err != nil {
		return res, fmt.Errorf("bolt: compact: %w", err)
	}
	res.After = fi.Size()
	return res, nil
}

// sameKeys checks that every top-level bucket of a holds as many keys,
// nested ones included, as the same bucket of b.
func sameKeys(a, b *bbolt.DB) error {
	counts := func(db *bbolt.DB) (map[string]int, error) {
		m := map[string]int{}
		err := db.View(func(tx *bbolt.Tx) error {
			return tx.ForEach(func(name []byte, bk *bbolt.Bucket) error {
				m[string(name)] = bk.Stats().KeyN
				return nil
			})
		})
		return m, err
	}
	ca, err := counts(a)
	if err != nil {
		return err
	}
	cb, err := counts(b)
	if err != nil {
		return err
	}
	if len(ca) != len(cb) {
		return fmt.Errorf("%d buckets, the copy %d", len(ca), len(cb))
	}
	for name, n := range ca {
		if cb[name] != n {
			return fmt.Errorf("bucket %q: %d keys, the copy %d", name, n, cb[name])
		}
	}
	return nil
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return f.Sync()
}
