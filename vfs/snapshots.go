package vfs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/inode"
)

// The snapshots directory. The root has a directory named like
// store.SnapshotsDir that it does not list (as ZFS's .zfs with
// snapdir=hidden): a program that walks the whole mount (find, du, a
// backup tool) would otherwise walk every snapshot as well, many times
// the live tree. Named, it is there: /.snapshots lists the snapshots, and
// /.snapshots/NAME is the tree below the snapshot's prefix as of its
// revision, read-only, read through the store's StatAt, ReadDirAt and
// OpenAt. A snapshot of one file shows as that file.
//
// Snapshots carry no store events. A snapshot deleted through this host
// is forgotten by the kernel before the deletion is acknowledged
// (Server.WaitApplied, which the delete calls, invalidates every name in
// /.snapshots the kernel knows and the store no longer has). For the rest
// (a snapshot created or deleted by another host) the kernel is told to
// keep a name in /.snapshots only briefly (snapshotNameTimeout), and
// never beyond the snapshot's expiry, and never to remember a missing
// name. Forgetting the name forgets everything below it: a path through a
// deleted or expired snapshot is looked up again and fails. Below a name,
// nothing ever changes, so the mount's usual timeouts apply; a process
// whose working directory is inside a deleted snapshot reads what the
// store still keeps of it.

// snapshotsName is the root's hidden directory of snapshots.
var snapshotsName = depotpath.Base(store.SnapshotsDir)

// snapshotNameTimeout is how long the kernel keeps a name in /.snapshots
// and the attributes of /.snapshots itself.
const snapshotNameTimeout = time.Second

// expiryMargin is how long before a snapshot's expiry the kernel is made
// to look its name up again: the kernel counts timeouts in clock ticks
// (up to 4 ms each) and rounds them up.
const expiryMargin = 10 * time.Millisecond

// nameTimeout is how long the kernel may keep snapshot s's name, at now:
// snapshotNameTimeout, or less when s expires sooner; never zero, which
// go-fuse would replace with the mount's day-long default.
func nameTimeout(s store.Snapshot, now time.Time) time.Duration {
	d := snapshotNameTimeout
	if !s.Expires.IsZero() {
		d = min(d, s.Expires.Sub(now)-expiryMargin)
	}
	return max(d, time.Nanosecond)
}

// expired reports whether snapshot s has expired at now. The store's
// sweep releases it later; until then the mount already shows it gone, so
// a snapshot never shows a tree losing files while its release runs.
func expired(s store.Snapshot, now time.Time) bool {
	return !s.Expires.IsZero() && !now.Before(s.Expires)
}

// snapshots returns the snapshots the mount shows: the store's, less
// those expired at now.
func (fsys *fsys) snapshots(ctx context.Context, now time.Time) ([]store.Snapshot, error) {
	all, err := fsys.st.Snapshots(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(s store.Snapshot) bool { return expired(s, now) }), nil
}

// Inode numbers in the snapshots directory are package inode's
// (inode.InSnapshot), with the snapshot's number in this mount: snapIDs
// counts the snapshots the mount meets, so no two collide while it runs.
// After a restart the same number may mean another snapshot, so each
// kernel inode below /.snapshots also carries the snapshot's revision as
// its generation (snapGen): a file handle kept across a restart (kernel
// NFS re-export) then fails with ESTALE instead of opening another
// snapshot's file.
const snapshotsIno = inode.SnapshotsDir

// snapIDs numbers the snapshots a mount has shown, by name and revision:
// a snapshot deleted and taken again under its name is another tree, with
// other inode numbers. Safe for concurrent use.
type snapIDs struct {
	mu  sync.Mutex // guards ids and n
	ids map[snapKey]uint64
	n   uint64
}

type snapKey struct {
	name string
	rev  uint64
}

// id returns snapshot s's number in the mount.
func (t *snapIDs) id(s store.Snapshot) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := snapKey{s.Name, s.Revision}
	if id, ok := t.ids[k]; ok {
		return id
	}
	if t.ids == nil {
		t.ids = map[snapKey]uint64{}
	}
	t.n++
	t.ids[k] = t.n
	return t.n
}

// snapIno is the inode number of entry e in the snapshot numbered id.
func snapIno(id uint64, e store.Entry) uint64 { return inode.InSnapshot(id, e) }

// snapGen is the generation of every kernel inode of a snapshot's tree
// (see snapIno): its revision, folded into the 32 bits the kernel keeps.
func snapGen(rev uint64) uint64 { return uint64(uint32(rev) ^ uint32(rev>>32)) }

// snapshotsDir is /.snapshots: the snapshots, by name. Stateless.
type snapshotsDir struct{ node }

var (
	_ = (fs.NodeLookuper)((*snapshotsDir)(nil))
	_ = (fs.NodeReaddirer)((*snapshotsDir)(nil))
	_ = (fs.NodeGetattrer)((*snapshotsDir)(nil))
)

// lookupSnapshots answers the root's lookup of the snapshots directory.
func (fsys *fsys) lookupSnapshots(ctx context.Context, root *fs.Inode, out *fuse.EntryOut) *fs.Inode {
	d := &snapshotsDir{node{fsys: fsys}}
	d.fillAttr(&out.Attr)
	out.SetEntryTimeout(snapshotNameTimeout)
	out.SetAttrTimeout(snapshotNameTimeout)
	return root.NewInode(ctx, d, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: snapshotsIno})
}

func (d *snapshotsDir) fillAttr(out *fuse.Attr) {
	d.fsys.fillAttr(store.Entry{Kind: store.KindDir, Ino: snapshotsIno, Path: store.SnapshotsDir}, out)
}

// Getattr reports a directory that never changes.
func (d *snapshotsDir) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	d.fillAttr(&out.Attr)
	out.SetTimeout(snapshotNameTimeout)
	return 0
}

// Lookup finds a snapshot by name. A missing name is answered so that the
// kernel does not remember it (a snapshot of that name may come).
func (d *snapshotsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	now := time.Now()
	out.SetEntryTimeout(snapshotNameTimeout)
	out.SetAttrTimeout(snapshotNameTimeout)
	all, err := d.fsys.snapshots(ctx, now)
	if err != nil {
		return nil, d.fsys.errno("lookup", store.SnapshotsDir, err)
	}
	i := slices.IndexFunc(all, func(s store.Snapshot) bool { return s.Name == name })
	if i < 0 {
		return nil, syscall.ENOENT
	}
	s := all[i]
	e, err := d.top(ctx, s)
	if err != nil {
		return nil, d.fsys.errno("lookup", s.Prefix, err)
	}
	out.SetEntryTimeout(nameTimeout(s, now))
	out.SetAttrTimeout(nameTimeout(s, now))
	at := snapTree{id: d.fsys.snaps.id(s), rev: s.Revision, expires: s.Expires}
	return at.child(ctx, d.fsys, d.EmbeddedInode(), e, &out.Attr), 0
}

// top returns the entry snapshot s shows at /.snapshots/NAME: its prefix
// as of its revision, or an empty directory when the prefix (or the root
// of an empty depot) had no entry then.
func (d *snapshotsDir) top(ctx context.Context, s store.Snapshot) (store.Entry, error) {
	e, err := d.fsys.st.StatAt(ctx, s.Prefix, s.Revision)
	if errors.Is(err, store.ErrNotExist) {
		return store.Entry{Path: s.Prefix, Kind: store.KindDir}, nil
	}
	return e, err
}

// Readdir lists the snapshots.
func (d *snapshotsDir) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	all, err := d.fsys.snapshots(ctx, time.Now())
	if err != nil {
		return nil, d.fsys.errno("readdir", store.SnapshotsDir, err)
	}
	list := make([]fuse.DirEntry, 0, len(all))
	for _, s := range all {
		e, err := d.top(ctx, s)
		if err != nil {
			continue // deleted since it was listed
		}
		list = append(list, fuse.DirEntry{Name: s.Name, Mode: stableAttr(e).Mode, Ino: snapIno(d.fsys.snaps.id(s), e)})
	}
	return fs.NewListDirStream(list), 0
}

// snapTree is one snapshot's tree in the mount: its number there, the
// revision it shows and when it expires (zero: never).
type snapTree struct {
	id, rev uint64
	expires time.Time
}

// expired reports whether the tree's snapshot has expired at now (see
// the package function expired).
func (t snapTree) expired(now time.Time) bool {
	return expired(store.Snapshot{Expires: t.expires}, now)
}

// child returns the inode for entry e of the tree, as a child of parent,
// and fills out.
func (t snapTree) child(ctx context.Context, fsys *fsys, parent *fs.Inode, e store.Entry, out *fuse.Attr) *fs.Inode {
	fsys.fillAttr(e, out)
	out.Ino = snapIno(t.id, e)
	var n fs.InodeEmbedder = &snapFile{node: node{fsys: fsys}, tree: t, version: newFileVersion(e)}
	if e.IsDir() {
		n = &snapDir{node: node{fsys: fsys}, tree: t, path: strings.Clone(e.Path), ino: e.Ino}
	}
	return parent.NewInode(ctx, n, fs.StableAttr{Mode: out.Mode & syscall.S_IFMT, Ino: out.Ino, Gen: snapGen(t.rev)})
}

// snapDir is a directory of a snapshot's tree. Immutable.
type snapDir struct {
	node
	tree snapTree
	path string
	ino  uint64 // the store's inode number of the directory
}

var (
	_           = (fs.NodeLookuper)((*snapDir)(nil))
	_           = (fs.NodeGetattrer)((*snapDir)(nil))
	_           = (fs.NodeOpendirHandler)((*snapDir)(nil))
	_ listedDir = (*snapDir)(nil)
)

// Lookup finds a child as of the snapshot's revision. Nothing below a
// snapshot's name changes, so the kernel keeps the entry for
// Options.EntryTimeout even on a shared store, whose live entries it does
// not keep.
func (d *snapDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if clean, err := depotpath.CleanName(name); err != nil || clean != name {
		return nil, syscall.ENOENT
	}
	p := depotpath.Join(d.path, name)
	e, err := d.fsys.st.StatAt(ctx, p, d.tree.rev)
	if err != nil {
		return nil, d.fsys.errno("lookup", p, err)
	}
	out.SetEntryTimeout(d.fsys.opts.EntryTimeout)
	return d.tree.child(ctx, d.fsys, d.EmbeddedInode(), e, &out.Attr), 0
}

// Getattr reports the directory as of the snapshot's revision.
func (d *snapDir) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	e, err := d.fsys.st.StatAt(ctx, d.path, d.tree.rev)
	if errors.Is(err, store.ErrNotExist) {
		e, err = store.Entry{Path: d.path, Kind: store.KindDir, Ino: d.ino}, nil
	}
	if err != nil {
		return d.fsys.errno("getattr", d.path, err)
	}
	d.fsys.fillAttr(e, &out.Attr)
	out.Ino = d.StableAttr().Ino
	return 0
}

// OpendirHandle opens the directory for listing. A snapshot's listing
// never changes, so the kernel may cache it for as long as it keeps the
// directory.
func (d *snapDir) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &dirHandle{dir: d}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// list reads the directory as of the snapshot's revision.
func (d *snapDir) list(ctx context.Context) (*store.Listing, syscall.Errno) {
	entries, err := d.fsys.st.ReadDirAt(ctx, d.path, d.tree.rev)
	if errors.Is(err, store.ErrNotExist) && d.ino == 0 {
		return store.ListingOf(d.path, nil), 0 // the empty tree of a prefix that did not exist
	}
	if err != nil {
		return nil, d.fsys.errno("readdir", d.path, err)
	}
	return store.ListingOf(d.path, entries), 0
}

func (d *snapDir) listedAs(l store.Listed) (uint64, uint32) {
	e := listedEntry(l)
	return snapIno(d.tree.id, e), stableAttr(e).Mode
}

func (d *snapDir) lookupListed(ctx context.Context, l *store.Listing, i int, out *fuse.EntryOut) (*fs.Inode, bool) {
	e, err := l.Entry(i)
	if err != nil {
		return nil, false
	}
	out.SetEntryTimeout(d.fsys.opts.EntryTimeout)
	return d.tree.child(ctx, d.fsys, d.EmbeddedInode(), e, &out.Attr), true
}

// snapFile is a file version of a snapshot's tree. Immutable.
type snapFile struct {
	node
	primer  primer
	tree    snapTree
	version fileVersion
}

var (
	_ = (fs.NodeOpener)((*snapFile)(nil))
	_ = (fs.NodeGetattrer)((*snapFile)(nil))
	_ = (fs.NodeGetxattrer)((*snapFile)(nil))
)

// Getattr reports the version.
func (f *snapFile) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fsys.fillAttr(f.version.entry(), &out.Attr)
	out.Ino = f.StableAttr().Ino
	return 0
}

// Open reads the version's content. Its bytes never change, so the
// kernel keeps its pages across opens. A version the store no longer
// keeps (its snapshot was deleted since the kernel looked it up) fails
// with ENOENT; a placeholder with EIO, as its content was never there to
// keep. So does an open at or after the snapshot's expiry, by this
// host's clock, though the store's release has not run: the kernel may
// still hold the snapshot's name for the few milliseconds a lookup's
// reply took to reach it, and every open comes here.
func (f *snapFile) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&writeFlags != 0 {
		return nil, 0, syscall.EROFS
	}
	if f.tree.expired(time.Now()) {
		return nil, 0, syscall.ENOENT
	}
	c, err := f.fsys.st.OpenAt(ctx, f.version.path, f.tree.rev)
	if err != nil {
		return nil, 0, f.fsys.errno("open", f.version.path, err)
	}
	f.primer.prime(&f.node, c, f.version.path) // as the live tree's files do
	return &snapHandle{fsys: f.fsys, path: f.version.path, c: c}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// Getxattr reads the version's provenance attributes.
func (f *snapFile) Getxattr(_ context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	return getxattr(f.version.entry(), name, dest)
}

// snapHandle is an open file of a snapshot: its content, read one
// kernel-requested range at a time. Read is safe for concurrent use; the
// kernel calls Release once, after every Read has returned.
type snapHandle struct {
	fsys *fsys
	path string
	c    store.Content
}

var (
	_ = (fs.FileReader)((*snapHandle)(nil))
	_ = (fs.FileReleaser)((*snapHandle)(nil))
)

// Read fills dest from offset off; short only at the end of the file.
func (h *snapHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.c.ReadAt(dest, off)
	if err != nil && n < len(dest) && !errors.Is(err, io.EOF) {
		return nil, h.fsys.errno("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Release closes the content.
func (h *snapHandle) Release(context.Context) syscall.Errno {
	if err := h.c.Close(); err != nil {
		return h.fsys.errno("release", h.path, err)
	}
	return 0
}

// forgetSnapshots tells the kernel to forget every name in /.snapshots it
// knows whose snapshot is gone: deleted, expired, or deleted and taken
// again under its name (another tree). Forgetting the name drops the
// kernel's entries below it too. It lists the store's snapshots only when
// the kernel knows some name there.
func (fsys *fsys) forgetSnapshots(ctx context.Context, root *fs.Inode) error {
	dir := root.GetChild(snapshotsName)
	if dir == nil {
		return nil
	}
	known := dir.Children()
	if len(known) == 0 {
		return nil
	}
	all, err := fsys.snapshots(ctx, time.Now())
	if err != nil {
		return fmt.Errorf("vfs: listing snapshots: %w", err)
	}
	for name, ch := range known {
		var tree snapTree
		switch n := ch.Operations().(type) {
		case *snapDir:
			tree = n.tree
		case *snapFile:
			tree = n.tree
		}
		if slices.ContainsFunc(all, func(s store.Snapshot) bool { return s.Name == name && s.Revision == tree.rev }) {
			continue
		}
		if errno := dir.NotifyEntry(name); errno != 0 && errno != syscall.ENOENT {
			return fmt.Errorf("vfs: forgetting snapshot %s: %w", name, errno)
		}
	}
	return nil
}
