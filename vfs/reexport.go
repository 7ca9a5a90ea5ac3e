package vfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/inode"
)

var _ = (fs.NodeLookupNoder)((*dirNode)(nil))

// LookupNode resolves a node ID the kernel has no inode for: the node ID
// of a file handle given out before depotfs restarted (or before the
// kernel forgot the inode), which open_by_handle_at, or the kernel's NFS
// server re-exporting the mount, hands back. The kernel asks this only
// because the mount announces export support (see mountOptions); go-fuse
// asks it of the root only.
//
// A node ID is depotfs's inode number (package inode). A file version's
// carries the revision that made it, and the store's change log says
// which path that revision wrote: the version is found again while the
// log and the store keep it (then a newer version of the path makes the
// node one whose file was replaced: link count 0, reading the old bytes,
// as an open file does after a rename-replace). Anything else answers
// ESTALE, and the client looks the name up again: a directory (the store
// has no index from a directory's inode number to its path), a snapshot's
// entry (its numbers are the mount's own), a version the store no longer
// keeps, or a revision older than the kept change log.
func (d *dirNode) LookupNode(ctx context.Context, id uint64, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	rev, ok := inode.Revision(id)
	if !ok || rev == 0 {
		return nil, syscall.ESTALE
	}
	page, err := d.fsys.st.Changes(ctx, "/", rev-1, 1)
	if err != nil {
		return nil, d.fsys.errno("lookup by handle", "", err)
	}
	if page.Resync || len(page.Events) == 0 || page.Events[0].Revision != rev {
		return nil, syscall.ESTALE
	}
	p := page.Events[0].Path
	e, err := d.fsys.st.StatAt(ctx, p, rev)
	if errors.Is(err, store.ErrNotExist) || err == nil && (e.IsDir() || Ino(e) != id) {
		return nil, syscall.ESTALE
	}
	if err != nil {
		return nil, d.fsys.errno("lookup by handle", p, err)
	}
	f := &fileNode{node: node{fsys: d.fsys}, version: newFileVersion(e)}
	if now, err := d.fsys.st.Stat(ctx, p); err != nil || now.IsDir() || Ino(now) != id {
		f.markGone()
	}
	f.fillAttr(&out.Attr)
	return d.NewInode(ctx, f, stableAttr(e)), 0
}
