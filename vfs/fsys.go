package vfs

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
)

// fsys is what every node of one mount shares: the store and the resolved
// options. It is immutable once Mount has built it, so nodes use it from any
// goroutine without locking, except pt, which Mount sets once it knows
// whether the kernel takes passthrough.
type fsys struct {
	st      store.Store
	opts    Options
	log     *slog.Logger
	started time.Time
	pt      atomic.Pointer[blobs] // nil: passthrough off
}

// child returns the inode for entry e, named name in directory parent, and
// fills out for the kernel. It reuses the inode parent already has under
// that name when it is the same version of the same entry, or a file node
// that can follow e (see fileNode.follow): go-fuse would discard a
// duplicate anyway, and invalidations sent to a discarded duplicate fail.
// A file node e replaces is marked gone.
func (fsys *fsys) child(ctx context.Context, parent *fs.Inode, name string, e store.Entry, out *fuse.EntryOut) *fs.Inode {
	id := stableAttr(e)
	if ch := parent.GetChild(name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok && !e.IsDir() {
			if res, _ := f.follow(ctx, e, nil, false); res != replaced {
				f.fillAttr(&out.Attr)
				return ch
			}
			f.markGone()
		} else if ch.StableAttr() == id {
			fsys.fillAttr(e, &out.Attr)
			return ch
		}
	}
	fsys.fillAttr(e, &out.Attr)
	var node fs.InodeEmbedder
	if e.IsDir() {
		node = &dirNode{fsys: fsys, path: e.Path}
	} else {
		node = &fileNode{fsys: fsys, version: newFileVersion(e)}
	}
	return parent.NewInode(ctx, node, id)
}
