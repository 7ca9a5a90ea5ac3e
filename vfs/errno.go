package vfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// storeErrnos is the errno the kernel gets for every error value of
// package store, and whether the error is an ordinary answer (not logged),
// worth a warning, or a failure logged as an error. The mount only reads,
// so the errors of writes (conflicts, limits, uploads) should never reach
// it; they still map explicitly, to EIO. TestStoreErrorsMapped
// (mcpserver/internal/errmaps) fails when a store error is missing.
var storeErrnos = []struct {
	err   error
	errno syscall.Errno
	log   logLevel
}{
	{store.ErrNotExist, syscall.ENOENT, quiet},
	{store.ErrNotDir, syscall.ENOTDIR, quiet},
	{store.ErrIsDir, syscall.EISDIR, quiet},
	{store.ErrNotPresent, syscall.EIO, warn},
	{store.ErrNotEmpty, syscall.EIO, fail},
	{store.ErrExist, syscall.EIO, fail},
	{store.ErrConflict, syscall.EIO, fail},
	{store.ErrRevision, syscall.EIO, fail},
	{store.ErrHashMismatch, syscall.EIO, fail},
	{store.ErrUpload, syscall.EIO, fail},
	{store.ErrLimit, syscall.EIO, fail},
	// The store logged the damaged chunk once and counts every read of
	// it; the kernel retries a failed read, which would log again.
	{store.ErrCorrupt, syscall.EIO, quiet},
	{store.ErrClosed, syscall.EIO, fail},
	{store.ErrOutcomeUnknown, syscall.EIO, warn},
	{store.ErrUnavailable, syscall.EIO, warn},
}

// logLevel says how errno logs an error.
type logLevel int

const (
	quiet logLevel = iota // an ordinary answer
	warn
	fail
)

// StoreErrno returns the errno the mount answers for err, one of the error
// values of package store, and false when it has no explicit mapping.
func StoreErrno(err error) (syscall.Errno, bool) {
	for _, m := range storeErrnos {
		if errors.Is(err, m.err) {
			return m.errno, true
		}
	}
	return syscall.EIO, false
}

// errno turns an error from the store into the errno the kernel gets. It is
// the one place where errors cross the FUSE boundary; op and path say what
// failed, for the log line written for every error that is not an ordinary
// answer (a missing name, a directory where a file was expected).
func (fsys *fsys) errno(op, path string, err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, depotpath.ErrInvalid):
		// A name that cannot be a depot path cannot exist either.
		return syscall.ENOENT
	case errors.Is(err, context.Canceled):
		// The kernel interrupted the request (a signal to the reader).
		return syscall.EINTR
	}
	for _, m := range storeErrnos {
		if !errors.Is(err, m.err) {
			continue
		}
		switch m.log {
		case warn:
			fsys.log.Warn("vfs: file content is not present", "op", op, "path", path, "err", err)
		case fail:
			fsys.log.Error("vfs: store error", "op", op, "path", path, "err", err)
		}
		return m.errno
	}
	fsys.log.Error("vfs: store error", "op", op, "path", path, "err", err)
	return syscall.EIO
}
