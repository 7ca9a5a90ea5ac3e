package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// revisionsPerSecond bounds how many revisions a depot hands out in a
// second: a bolt commit fsyncs, and even a group commit of small writes
// stays far below it. A restore adds it per second since the backup was
// taken, so the revisions the lost depot handed out after the backup are
// never handed out again even when its database is gone.
const revisionsPerSecond = 1_000_000

// revisionMargin is the margin a restore puts above a backup taken at
// created: revisionsPerSecond for each second since, at least one.
func revisionMargin(created, now time.Time) uint64 {
	secs := max(now.Sub(created).Seconds(), 0)
	return uint64(secs*revisionsPerSecond) + 1
}

// rename is one file a restore moves into place.
type rename struct{ from, to string }

// asideSuffix names where a restore keeps a replaced file until the new
// ones are in place.
const asideSuffix = ".pre-restore"

// failRenameEnv names a destination base name whose rename a restore
// fails on purpose: the only way a test can make the last renames fail
// for a root process on any file system.
const failRenameEnv = "DEPOTFS_TEST_RESTORE_FAIL_RENAME"

// swapIn replaces the files in existing by the incoming ones, so that a
// failure at any step leaves the old files in place: the old files are
// renamed aside (beside themselves, one file system), the incoming ones
// renamed in, in order, the directories fsynced, and only then the old
// files removed. On an error every incoming file already in place is
// taken out again and the old files are put back.
func swapIn(existing []string, incoming []rename) error {
	for _, p := range existing {
		if _, err := os.Lstat(p + asideSuffix); err == nil {
			return fmt.Errorf("%s exists, left by an earlier restore that did not finish: keep what you need and remove it first", p+asideSuffix)
		}
	}
	var aside []string // renamed aside, in order
	var placed []string
	undo := func(cause error) error {
		var errs []error
		for _, p := range slices.Backward(placed) {
			if err := os.Remove(p); err != nil {
				errs = append(errs, err)
			}
		}
		for _, p := range slices.Backward(aside) {
			if err := os.Rename(p+asideSuffix, p); err != nil {
				errs = append(errs, err)
			}
		}
		errs = append(errs, syncDirs(existing))
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("%w; putting the old files back failed too, they are the files named *%s: %v", cause, asideSuffix, err)
		}
		return fmt.Errorf("%w (the old files are back in place)", cause)
	}
	for _, p := range existing {
		if err := os.Rename(p, p+asideSuffix); err != nil {
			return undo(err)
		}
		aside = append(aside, p)
	}
	dirs := existing
	for _, r := range incoming {
		if err := renameFile(r.from, r.to); err != nil {
			return undo(err)
		}
		placed = append(placed, r.to)
		dirs = append(dirs, r.to)
	}
	if err := syncDirs(dirs); err != nil {
		return undo(err)
	}
	// The new files are durable: the old ones can go.
	var errs []error
	for _, p := range aside {
		if err := os.Remove(p + asideSuffix); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(append(errs, syncDirs(existing))...); err != nil {
		return fmt.Errorf("restored, but removing the old files failed (remove the files named *%s): %w", asideSuffix, err)
	}
	return nil
}

// renameFile is os.Rename, failing on purpose where failRenameEnv says.
func renameFile(from, to string) error {
	if v := os.Getenv(failRenameEnv); v != "" && v == filepath.Base(to) {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: errors.New("failed on purpose (" + failRenameEnv + ")")}
	}
	return os.Rename(from, to)
}

// syncDirs fsyncs the directories of files, each once, so the renames
// into and out of them are durable.
func syncDirs(files []string) error {
	var errs []error
	seen := map[string]bool{}
	for _, p := range files {
		d := filepath.Dir(p)
		if seen[d] {
			continue
		}
		seen[d] = true
		f, err := os.Open(d)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("fsync %s: %w", d, err))
		}
		f.Close()
	}
	return errors.Join(errs...)
}
