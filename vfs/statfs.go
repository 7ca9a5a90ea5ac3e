package vfs

import (
	"context"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// statfs answers STATFS for the whole mount, whichever inode it is asked on (df, getconf NAME_MAX): in 4 KiB
// blocks, the store's limit as the size (or, with no limit, what it holds),
// what it holds as used, and the rest as free; the entries as used inodes;
// names up to 255 bytes. It reads one small record from the store, never
// waiting for writers, and gives up after a second (answering zeros for
// the store's figures) rather than hold a caller up.
func (fsys *fsys) statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	const bsize = 4096
	out.Bsize, out.Frsize, out.NameLen = bsize, bsize, maxNameLen
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	s, err := fsys.st.Stats(ctx)
	if err != nil {
		fsys.log.Warn("vfs: statfs: store statistics unavailable", "err", err)
		return 0
	}
	used := uint64(s.StoredBytes+bsize-1) / bsize
	total := used
	if s.MaxStoreBytes > 0 {
		total = max(used, uint64(s.MaxStoreBytes)/bsize)
	}
	out.Blocks, out.Bfree, out.Bavail = total, total-used, total-used
	files := uint64(s.Files + s.Placeholders + s.Dirs + 1)
	out.Files, out.Ffree = files+freeInodes, freeInodes
	return 0
}

// maxNameLen is the longest name, in bytes (a depot path component).
const maxNameLen = 255

// freeInodes is the number of free inodes shown: the store sets no limit on
// entries, and df wants a number.
const freeInodes = 1 << 32
