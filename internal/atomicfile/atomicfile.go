// Package atomicfile writes small files (keys, certificates, CRLs, token
// lists) so that a reader, or a crash, sees the old file or the new one
// whole, never a mix, and lets their writers take turns. It has no state.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write writes data to a temporary file beside path with mode, syncs it,
// renames it over path and syncs the directory, so the new content has
// replaced the old and survives a crash once Write returns nil. An error
// before the rename leaves path unchanged and no temporary file; an error
// syncing the directory after it means path already holds the new content,
// which a crash may still undo. Write is safe for
// concurrent use on different paths; writers of one path must serialise
// themselves (the last rename wins).
func Write(path string, data []byte, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// Locked runs fn holding an exclusive flock(2) on the lock file at path
// (created 0600 if missing), so that writers of the same files, in this
// process or others, take turns.
func Locked(path string, fn func() error) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	return fn()
}

// SyncDir makes a rename or creation in dir durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
