package vfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// listedDir is a directory an open handle lists: a live one (dirNode) or
// one of a snapshot's tree (snapDir).
type listedDir interface {
	fs.InodeEmbedder
	fs.NodeLookuper
	// list reads the directory's entries.
	list(ctx context.Context) ([]store.Entry, syscall.Errno)
	// listedAs is the inode number and mode the listing shows for e.
	listedAs(e store.Entry) (ino uint64, mode uint32)
	// lookupListed answers the lookup of e, the entry just listed.
	lookupListed(ctx context.Context, e store.Entry, out *fuse.EntryOut) *fs.Inode
}

// dirHandle is an open directory: a snapshot of its listing and a position
// in it. Positions 0 and 1 are "." and ".."; position i+2 is entries[i]. The
// offset the kernel sees after position i is i+1. go-fuse serializes the
// calls on one handle.
type dirHandle struct {
	dir     listedDir
	entries []store.Entry
	loaded  bool // entries has been read from the store
	pos     int
	// last is the entry most recently handed out, which READDIRPLUS looks
	// up right away: serving that lookup from the listing saves a store
	// read per entry.
	last *store.Entry
	// de is what Readdirent hands out, reused: go-fuse copies it before
	// asking for the next (an allocation per listed name otherwise).
	de fuse.DirEntry
}

var (
	_           = (fs.FileReaddirenter)((*dirHandle)(nil))
	_           = (fs.FileSeekdirer)((*dirHandle)(nil))
	_           = (fs.FileLookuper)((*dirHandle)(nil))
	_ listedDir = (*dirNode)(nil)
)

// load reads the listing on first use.
func (h *dirHandle) load(ctx context.Context) syscall.Errno {
	if h.loaded {
		return 0
	}
	entries, errno := h.dir.list(ctx)
	if errno != 0 {
		return errno
	}
	h.entries, h.loaded = entries, true
	return 0
}

// Readdirent returns the next directory entry, or nil at the end.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := h.load(ctx); errno != 0 {
		return nil, errno
	}
	h.de = fuse.DirEntry{Off: uint64(h.pos) + 1, Mode: syscall.S_IFDIR}
	de := &h.de
	h.last = nil
	self := h.dir.EmbeddedInode()
	switch {
	case h.pos == 0:
		de.Name, de.Ino = ".", self.StableAttr().Ino
	case h.pos == 1:
		de.Name, de.Ino = "..", self.StableAttr().Ino
		if _, parent := self.Parent(); parent != nil {
			de.Ino = parent.StableAttr().Ino
		}
	case h.pos-2 < len(h.entries):
		e := &h.entries[h.pos-2]
		de.Name = depotpath.Base(e.Path)
		de.Ino, de.Mode = h.dir.listedAs(*e)
		h.last = e
	default:
		return nil, 0
	}
	h.pos++
	return de, 0
}

// Seekdir moves to the position after offset off (rewinddir is offset 0).
func (h *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	if errno := h.load(ctx); errno != 0 {
		return errno
	}
	if off > uint64(len(h.entries))+2 {
		return syscall.EINVAL
	}
	h.pos = int(off)
	h.last = nil
	return 0
}

// Lookup answers READDIRPLUS's lookup of the entry just listed from the
// listing, and any other name as the directory does.
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if h.last != nil && depotpath.Base(h.last.Path) == name {
		return h.dir.lookupListed(ctx, *h.last, out), 0
	}
	return h.dir.Lookup(ctx, name, out)
}

// listedAs shows a file node that followed later versions with its first
// version's number: the listing says what stat says.
func (d *dirNode) listedAs(e store.Entry) (uint64, uint32) {
	id := stableAttr(e)
	if ch := d.GetChild(depotpath.Base(e.Path)); ch != nil && !e.IsDir() {
		if f, ok := ch.Operations().(*fileNode); ok {
			if v, _ := f.snapshot(); v.rev == e.Revision {
				return ch.StableAttr().Ino, id.Mode
			}
		}
	}
	return id.Ino, id.Mode
}

func (d *dirNode) lookupListed(ctx context.Context, e store.Entry, out *fuse.EntryOut) *fs.Inode {
	return d.fsys.child(ctx, d.EmbeddedInode(), depotpath.Base(e.Path), e, out)
}
