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
	list(ctx context.Context) (*store.Listing, syscall.Errno)
	// listedAs is the inode number and mode the listing shows for e.
	listedAs(e store.Listed) (ino uint64, mode uint32)
	// lookupListed answers the lookup of entry i of l, just listed;
	// false when its record does not decode.
	lookupListed(ctx context.Context, l *store.Listing, i int, out *fuse.EntryOut) (*fs.Inode, bool)
}

// dirHandle is an open directory: a snapshot of its listing and a position
// in it. Positions 0 and 1 are "." and ".."; position i+2 is entry i. The
// offset the kernel sees after position i is i+1. go-fuse serializes the
// calls on one handle.
type dirHandle struct {
	dir     listedDir
	entries *store.Listing // nil until read from the store
	pos     int
	// last is 1 + the index of the entry most recently handed out (0:
	// none), which READDIRPLUS looks up right away: serving that lookup
	// from the listing saves a store read per entry, and only then is the
	// entry decoded whole.
	last int
	// de is what Readdirent hands out, reused: go-fuse copies it before
	// asking for the next (an allocation per listed name otherwise).
	de fuse.DirEntry
}

var (
	_           = (fs.FileReaddirenter)((*dirHandle)(nil))
	_           = (fs.FileSeekdirer)((*dirHandle)(nil))
	_           = (fs.FileLookuper)((*dirHandle)(nil))
	_           = (fs.FileReleasedirer)((*dirHandle)(nil))
	_ listedDir = (*dirNode)(nil)
)

// load reads the listing on first use.
func (h *dirHandle) load(ctx context.Context) syscall.Errno {
	if h.entries != nil {
		return 0
	}
	entries, errno := h.dir.list(ctx)
	if errno != 0 {
		return errno
	}
	h.entries = entries
	return 0
}

// Readdirent returns the next directory entry, or nil at the end.
func (h *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	if errno := h.load(ctx); errno != 0 {
		return nil, errno
	}
	h.de = fuse.DirEntry{Off: uint64(h.pos) + 1, Mode: syscall.S_IFDIR}
	de := &h.de
	h.last = 0
	self := h.dir.EmbeddedInode()
	switch {
	case h.pos == 0:
		de.Name, de.Ino = ".", self.StableAttr().Ino
	case h.pos == 1:
		de.Name, de.Ino = "..", self.StableAttr().Ino
		if _, parent := self.Parent(); parent != nil {
			de.Ino = parent.StableAttr().Ino
		}
	case h.pos-2 < h.entries.Len():
		e := h.entries.At(h.pos - 2)
		de.Name = e.Name
		de.Ino, de.Mode = h.dir.listedAs(e)
		h.last = h.pos - 1
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
	if off > uint64(h.entries.Len())+2 {
		return syscall.EINVAL
	}
	h.pos = int(off)
	h.last = 0
	return 0
}

// Lookup answers READDIRPLUS's lookup of the entry just listed from the
// listing, and any other name as the directory does (so does an entry
// whose record does not decode, which the store then reports).
func (h *dirHandle) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if i := h.last - 1; i >= 0 && h.entries.At(i).Name == name {
		if n, ok := h.dir.lookupListed(ctx, h.entries, i, out); ok {
			return n, 0
		}
	}
	return h.dir.Lookup(ctx, name, out)
}

// Releasedir gives the listing's records back for the next listing to
// reuse (see store.Listing.Release): the kernel sends nothing more on a
// released handle, and go-fuse waits for the calls on it in flight.
func (h *dirHandle) Releasedir(context.Context, uint32) {
	if h.entries != nil {
		h.entries.Release()
		h.entries = nil
	}
}

// listedEntry is the entry a listing shows e as, with the fields that
// number it (see stableAttr).
func listedEntry(e store.Listed) store.Entry {
	return store.Entry{Kind: e.Kind, Ino: e.Ino, Revision: e.Revision}
}

// listedAs shows a file node that followed later versions with its first
// version's number: the listing says what stat says. Until a node of the
// mount has followed one (fsys.followed, set before the node takes the
// newer version), every file node's number is its version's, and the
// entry alone numbers it: a walk's READDIR looked each name up among the
// directory's nodes, a lock and a map probe a file, to find nothing.
func (d *dirNode) listedAs(l store.Listed) (uint64, uint32) {
	e := listedEntry(l)
	id := stableAttr(e)
	if e.IsDir() || !d.fsys.followed.Load() {
		return id.Ino, id.Mode
	}
	if ch := d.GetChild(l.Name); ch != nil {
		if f, ok := ch.Operations().(*fileNode); ok {
			if v, _ := f.snapshot(); v.rev == e.Revision {
				return ch.StableAttr().Ino, id.Mode
			}
		}
	}
	return id.Ino, id.Mode
}

// lookupListed answers from the entry raw (see store.RawEntry): a file's
// node keeps its path and hash as the listing decodes them.
func (d *dirNode) lookupListed(ctx context.Context, l *store.Listing, i int, out *fuse.EntryOut) (*fs.Inode, bool) {
	r, err := l.Raw(i)
	if err != nil {
		return nil, false
	}
	return d.fsys.child(ctx, d.EmbeddedInode(), depotpath.Base(r.Path), r.Entry, &r, out), true
}
