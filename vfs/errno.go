package vfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// errno turns an error from the store into the errno the kernel gets. It is
// the one place where errors cross the FUSE boundary; op and path say what
// failed, for the log line written for every error that is not an ordinary
// answer (a missing name, a directory where a file was expected).
func (fsys *fsys) errno(op, path string, err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, store.ErrNotExist), errors.Is(err, depotpath.ErrInvalid):
		// A name that cannot be a depot path cannot exist either.
		return syscall.ENOENT
	case errors.Is(err, store.ErrNotDir):
		return syscall.ENOTDIR
	case errors.Is(err, store.ErrIsDir):
		return syscall.EISDIR
	case errors.Is(err, context.Canceled):
		// The kernel interrupted the request (a signal to the reader).
		return syscall.EINTR
	case errors.Is(err, store.ErrNotPresent):
		fsys.log.Warn("vfs: file content is not present", "op", op, "path", path, "err", err)
		return syscall.EIO
	}
	fsys.log.Error("vfs: store error", "op", op, "path", path, "err", err)
	return syscall.EIO
}
