package bolt

import (
	"context"
	"fmt"
	"io"
	"os"

	"go.etcd.io/bbolt"
)

// Copy is a consistent copy of the database as of one revision, ready to
// be written: a bbolt read transaction, which writers do not wait for.
type Copy struct {
	Revision uint64 // the revision of the last change the copy holds
	Size     int64  // the copy's size in bytes
	tx       *bbolt.Tx
}

// WriteTo writes the copy, a complete database file, to w.
func (c Copy) WriteTo(w io.Writer) (int64, error) { return c.tx.WriteTo(w) }

// Backup calls fn with a consistent copy of the open database as of one
// revision, while writers go on (bbolt's Tx.WriteTo, as bbolt recommends
// for hot backups). The copy is valid only during fn. Reopened as a
// store, it holds exactly the changes up to Copy.Revision, and its
// revisions continue above it.
func (s *Store) Backup(ctx context.Context, fn func(Copy) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.db.View(func(tx *bbolt.Tx) error { return fn(copyOf(tx)) })
}

// BackupFile is Backup for the database at path when no process has it
// open: depotfs serve running on it is refused with a *LockedError.
func BackupFile(path string, fn func(Copy) error) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("bolt: backup: %w", err)
	}
	db, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("bolt: backup: %w", err)
	}
	defer lock.Close()
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error { return fn(copyOf(tx)) })
}

// copyOf describes the database as tx sees it.
func copyOf(tx *bbolt.Tx) Copy {
	var rev uint64
	if meta := tx.Bucket(bucketMeta); meta != nil {
		rev = u64(meta.Get(keyRevision))
	}
	return Copy{Revision: rev, Size: tx.Size(), tx: tx}
}

// FileRevision returns the revision of the last change in the database at
// path, which no process may have open, without changing the file (a
// read-only open: no upgrade, no creation). A missing file is an error
// wrapping fs.ErrNotExist.
func FileRevision(path string) (uint64, error) {
	var rev uint64
	err := BackupFile(path, func(c Copy) error { rev = c.Revision; return nil })
	return rev, err
}

// RaiseRevision makes the revisions of the database at path, which no
// process may have open, continue above min: the next change gets a
// revision above both its own last one and min. Restore uses it so that
// no revision the lost depot handed out is handed out again; revisions
// may skip, never repeat. It returns the revision the file now holds.
func RaiseRevision(path string, min uint64) (uint64, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, fmt.Errorf("bolt: raise revision: %w", err)
	}
	db, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return 0, fmt.Errorf("bolt: raise revision: %w", err)
	}
	defer lock.Close()
	var rev uint64
	err = db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("%s: not a depotfs database (no %s bucket)", path, bucketMeta)
		}
		rev = max(u64(meta.Get(keyRevision)), min)
		if err := meta.Put(keyRevision, u64bytes(rev)); err != nil {
			return err
		}
		// The log holds the backup's changes, not the way from the
		// replaced depot to it: every older cursor must resync.
		return meta.Put(keyChangesFrom, u64bytes(rev))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("bolt: raise revision: %w", err)
	}
	return rev, nil
}
