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
