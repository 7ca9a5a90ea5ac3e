package vfs

import (
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/inode"
)

// blockSize is the st_blksize reported for every entry: the largest READ
// request the kernel sends (Options caps MaxWrite at it), so programs that
// size their buffers by st_blksize read in the largest useful chunks.
const blockSize = 1 << 20

// dirBlockSize is a directory's st_blksize, as ext4's.
const dirBlockSize = 4096

// Ino returns the inode number the mount shows for an entry: its number
// in package inode (inode.Of), shared with every other door onto the depot.
// A directory has the store's inode number for its whole life; each
// version of a file has its own, the same after a restart. A version that
// the kernel's inode for an earlier version follows (same content, or an
// append) keeps that inode's number while the kernel knows it.
func Ino(e store.Entry) uint64 { return inode.Of(e) }

// stableAttr is the identity of the kernel inode for an entry. Directories
// are one inode for their whole life (their content is asked for afresh).
// Files get one inode per version (see Ino), with an empty page cache.
func stableAttr(e store.Entry) fs.StableAttr {
	if e.IsDir() {
		return fs.StableAttr{Mode: syscall.S_IFDIR, Ino: e.Ino}
	}
	return fs.StableAttr{Mode: syscall.S_IFREG, Ino: Ino(e)}
}

// dirSize is the size every directory reports, as ext4 reports an empty
// one: find -size 0 and du look for empty files, not directories.
const dirSize = 4096

// fillAttr reports an entry as the kernel should see it.
//
// Times: mtime is the entry's MTime (the agent's, else the arrival time);
// ctime is Updated (the last change of content or metadata, which is what
// ctime means); atime is the mtime, since reads are not recorded. A zero time
// is shown as the mount's start. Directories report a link count of 1, the
// convention (btrfs, most FUSE filesystems) for "subdirectories not
// counted", which keeps find and fts from trusting a wrong count.
func (fsys *fsys) fillAttr(e store.Entry, out *fuse.Attr) {
	out.Ino = Ino(e)
	out.Mode = stableAttr(e).Mode | fsys.opts.perm(e)
	out.Nlink = 1
	out.Uid = fsys.opts.UID
	out.Gid = fsys.opts.GID
	switch {
	case e.IsDir():
		out.Size = dirSize
	case e.Size > 0:
		out.Size = uint64(e.Size)
	}
	out.Blksize = blockSize
	if e.IsDir() {
		out.Blksize = dirBlockSize
	}
	out.Blocks = (out.Size + 511) / 512
	mtime := fsys.orStart(e.MTime)
	ctime := fsys.orStart(e.Updated)
	out.SetTimes(&mtime, &mtime, &ctime)
}

func (fsys *fsys) orStart(t time.Time) time.Time {
	if t.IsZero() || t.Before(time.Unix(0, 0)) {
		return fsys.started
	}
	return t
}
