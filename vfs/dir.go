package vfs

import (
	"context"
	"errors"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// dirNode is a directory. It holds only its path: attributes and listings
// are asked of the store each time the kernel asks (the kernel caches them,
// and invalidation tells it when to stop). Immutable, so safe for
// concurrent use.
type dirNode struct {
	node
	path string
}

var (
	_ = (fs.NodeLookuper)((*dirNode)(nil))
	_ = (fs.NodeGetattrer)((*dirNode)(nil))
	_ = (fs.NodeOpendirHandler)((*dirNode)(nil))
)

// Lookup finds a child in the store.
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if clean, err := depotpath.CleanName(name); err != nil || clean != name {
		// Not a name the store can hold (for example not in NFC): asking
		// would only fail, and a normalized answer would give one entry
		// two names.
		return nil, syscall.ENOENT
	}
	if d.path == depotpath.Root && name == snapshotsName {
		return d.fsys.lookupSnapshots(ctx, d.EmbeddedInode(), out), 0
	}
	p := depotpath.Join(d.path, name)
	if err := d.fsys.catchUp(ctx); err != nil {
		return nil, d.fsys.errno("lookup", p, err)
	}
	e, err := d.fsys.st.Stat(ctx, p)
	if err != nil {
		return nil, d.fsys.errno("lookup", p, err)
	}
	return d.fsys.child(ctx, d.EmbeddedInode(), name, e, nil, out), 0
}

// Getattr reports the directory's current attributes.
func (d *dirNode) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	e, err := d.stat(ctx)
	if err != nil {
		return d.fsys.errno("getattr", d.path, err)
	}
	d.fsys.fillAttr(e, &out.Attr)
	return 0
}

// stat returns the directory's entry. The root always exists, even in a
// store that has no entry for it yet.
func (d *dirNode) stat(ctx context.Context) (store.Entry, error) {
	e, err := d.fsys.st.Stat(ctx, d.path)
	if err != nil && d.path == depotpath.Root && errors.Is(err, store.ErrNotExist) {
		return store.Entry{Path: depotpath.Root, Kind: store.KindDir, Ino: store.RootIno}, nil
	}
	return e, err
}

// OpendirHandle opens the directory for listing and asks the kernel to
// cache the listing (FOPEN_CACHE_DIR) until invalidation says the directory
// changed. The listing is read from the store on the first READDIR: when
// the kernel's cached listing is still good, it sends none. With
// Options.Shared the kernel does not cache listings: another host's change
// may not have been told to it yet, and each listing asks the store.
func (d *dirNode) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if d.fsys.opts.Shared {
		return &dirHandle{dir: d}, 0, 0
	}
	return &dirHandle{dir: d}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// list reads the directory's listing from the store, as one consistent
// snapshot: compact when the store can list so (store.Lister).
func (d *dirNode) list(ctx context.Context) (*store.Listing, syscall.Errno) {
	var (
		l   *store.Listing
		err error
	)
	if lister, ok := d.fsys.st.(store.Lister); ok {
		l, err = lister.List(ctx, d.path)
	} else {
		var entries []store.Entry
		entries, err = d.fsys.st.ReadDir(ctx, d.path)
		l = store.ListingOf(d.path, entries)
	}
	if err != nil {
		if d.path == depotpath.Root && errors.Is(err, store.ErrNotExist) {
			return store.ListingOf(d.path, nil), 0
		}
		return nil, d.fsys.errno("readdir", d.path, err)
	}
	return l, 0
}
