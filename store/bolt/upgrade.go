package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strconv"

	bbolt "go.etcd.io/bbolt"
)

// ErrUpgrade reports a database written in an older layout, which Open
// upgrades only when Options.Upgrade allows it: after an upgrade the
// previous depotfs refuses the file.
var ErrUpgrade = errors.New("database needs an upgrade")

// ErrNotDepot reports a file that is a bbolt database but not a depot's
// (no meta bucket or no schema), or an empty one.
var ErrNotDepot = errors.New("not a depotfs database")

// UpgradeCopyPath is where Open keeps a copy of the database at path, of
// schema version from, before upgrading it: the way back to the depotfs
// that wrote it. Open never removes it; the operator does, once the
// upgraded depot is trusted.
func UpgradeCopyPath(path string, from uint64) string {
	return path + ".schema" + strconv.FormatUint(from, 10)
}

// schemaOf returns the schema version the file records, 0 for a file
// that has no meta bucket yet (new).
func schemaOf(db *bbolt.DB) (uint64, error) {
	var v uint64
	err := db.View(func(tx *bbolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil {
			v = u64(meta.Get(keySchema))
		}
		return nil
	})
	return v, err
}

// prepareUpgrade refuses, or copies aside, a database of an older schema
// before init upgrades it: with upgrade false it fails with ErrUpgrade;
// otherwise it writes a complete copy of the file, as it is, to
// UpgradeCopyPath, syncs it and returns its path ("" when the file needs
// no upgrade). A copy already there is kept (an upgrade that failed after
// the copy leaves the same old file).
func prepareUpgrade(db *bbolt.DB, path string, upgrade bool) (string, error) {
	v, err := schemaOf(db)
	if err != nil || v == 0 || v >= schemaVersion {
		return "", err
	}
	if !upgrade {
		return "", fmt.Errorf("%w: schema version %d, this build writes %d: 'depotfs upgrade --db %s' upgrades it, keeping a copy of the old file (serve does the same)", ErrUpgrade, v, schemaVersion, path)
	}
	dst := UpgradeCopyPath(path, v)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	tmp := dst + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("copy before the upgrade: %w", err)
	}
	err = db.View(func(tx *bbolt.Tx) error { _, err := tx.WriteTo(f); return err })
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("copy before the upgrade: %w", err)
	}
	return dst, nil
}

// initReadOnly is init for a read-only Store: it changes nothing, so it
// checks the file is a depot's and loads the revision, the counters (zero
// for an older schema, which keeps them elsewhere) and what uploads hold.
// An older schema is read as it is: the tree, the blobs and the live
// reads have kept their layout.
func (s *Store) initReadOnly() (uint64, error) {
	var rev uint64
	var c counters
	err := s.db.View(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || meta.Get(keySchema) == nil {
			return ErrNotDepot
		}
		v := u64(meta.Get(keySchema))
		if v > schemaVersion {
			return fmt.Errorf("schema version %d, this build reads %d", v, schemaVersion)
		}
		if err := s.loadSeal(tx, s.opts.Key); err != nil {
			return err
		}
		rev = u64(meta.Get(keyRevision))
		if v == schemaVersion {
			var err error
			if c, err = loadCounters(meta); err != nil {
				return err
			}
		}
		var err error
		if s.logFrom, s.logged, err = loadChanges(tx, rev, s.sealer); err != nil {
			return err
		}
		if b := tx.Bucket(bucketUploads); b != nil {
			return s.staged.load(b, s.sealer)
		}
		return nil
	})
	s.uses.init(c, s.opts.usesPerFlush)
	return rev, err
}

// Upgrade upgrades the database at path, which no process may have open,
// to the current schema, and returns where the old file is kept ("" when
// it was current already). A missing file is an error wrapping
// fs.ErrNotExist: nothing is created.
func Upgrade(path string) (oldCopy string, err error) {
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("bolt: upgrade: %w", err)
	}
	s, err := Open(path, &Options{Upgrade: true, Logger: discardLogger})
	if err != nil {
		return "", err
	}
	return s.oldCopy, s.Close()
}

// discardLogger is the logger of a Store opened only to be upgraded: the
// caller reports what happened.
var discardLogger = slog.New(slog.DiscardHandler)
