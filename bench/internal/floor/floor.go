// Package floor is the FUSE floor the mount is measured against: the
// smallest go-fuse server that serves a tree held in memory, every name,
// attribute and byte computed before it mounts, with the mount options
// depotfs uses (read-only, kernel caches for a day, listings cached with
// FOPEN_CACHE_DIR, READDIRPLUS_AUTO). Whatever depotfs spends above it is
// its own: the store, its nodes, its collector. Like depotfs it makes a
// node when the kernel looks a name up, and drops it when the kernel
// forgets it.
package floor

import (
	"context"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Tree is a directory tree held in memory. Add files, then Mount it.
type Tree struct {
	root *dirData
	dirs map[string]*dirData
	ino  uint64
	at   time.Time
}

// dirData is one directory: its entries sorted by name once the tree is
// mounted, and an index by name.
type dirData struct {
	ino    uint64
	ents   []*entry
	byName map[string]*entry
}

// entry is a name in a directory: a file with its bytes, or a directory.
type entry struct {
	name string
	ino  uint64
	dir  *dirData // nil for a file
	data []byte
}

// New returns an empty tree whose times are at.
func New(at time.Time) *Tree {
	t := &Tree{dirs: map[string]*dirData{}, ino: 1, at: at}
	t.root = &dirData{ino: 1, byName: map[string]*entry{}}
	t.dirs["/"] = t.root
	return t
}

// Add adds the file at the absolute path p with content data, and the
// directories above it.
func (t *Tree) Add(p string, data []byte) {
	d := t.dir(path.Dir(p))
	t.ino++
	e := &entry{name: path.Base(p), ino: t.ino, data: data}
	d.ents = append(d.ents, e)
	d.byName[e.name] = e
}

func (t *Tree) dir(p string) *dirData {
	if d, ok := t.dirs[p]; ok {
		return d
	}
	parent := t.dir(path.Dir(p))
	t.ino++
	d := &dirData{ino: t.ino, byName: map[string]*entry{}}
	e := &entry{name: path.Base(p), ino: t.ino, dir: d}
	parent.ents = append(parent.ents, e)
	parent.byName[e.name] = e
	t.dirs[p] = d
	return d
}

// day is how long the kernel keeps entries and attributes, as depotfs's
// vfs.DefaultTimeout.
const day = 24 * time.Hour

// maxRead is depotfs's largest READ and readahead window.
const maxRead = 1 << 20

// Mount serves the tree at dir until the returned server is unmounted.
func Mount(dir string, t *Tree) (*fuse.Server, error) {
	for _, d := range t.dirs {
		slices.SortFunc(d.ents, func(a, b *entry) int {
			switch {
			case a.name < b.name:
				return -1
			case a.name > b.name:
				return 1
			}
			return 0
		})
	}
	timeout := day
	root := &dirNode{t: t, d: t.root}
	return fs.Mount(dir, root, &fs.Options{
		MountOptions: fuse.MountOptions{
			Options:           []string{"ro", "nosuid", "nodev", "default_permissions", "noexec"},
			DirectMount:       true,
			DirectMountFlags:  syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC,
			FsName:            "floor",
			Name:              "floor",
			MaxWrite:          maxRead,
			MaxReadAhead:      maxRead,
			ExtraCapabilities: fuse.CAP_READDIRPLUS_AUTO | fuse.CAP_DIRECT_IO_ALLOW_MMAP,
		},
		EntryTimeout:    &timeout,
		AttrTimeout:     &timeout,
		NegativeTimeout: &timeout,
		NullPermissions: true,
		RootStableAttr:  &fs.StableAttr{Ino: 1},
	})
}

// fill sets the attributes of e as depotfs shows a file or directory.
func (t *Tree) fill(e *entry, out *fuse.Attr) {
	out.Ino = e.ino
	out.Nlink = 1
	if e.dir != nil {
		out.Mode = syscall.S_IFDIR | 0o555
		out.Size = 4096
	} else {
		out.Mode = syscall.S_IFREG | 0o444
		out.Size = uint64(len(e.data))
	}
	out.Blksize = 4096
	out.Blocks = (out.Size + 511) / 512
	out.SetTimes(&t.at, &t.at, &t.at)
}

// node is what every node answers alike: no extended attributes outside
// user.* (EOPNOTSUPP, as depotfs answers, so ls stops asking for them), and
// none of its own.
type node struct{ fs.Inode }

var _ = (fs.NodeGetxattrer)((*node)(nil))

// Getxattr answers that the attribute is absent, or not supported outside
// user.*.
func (*node) Getxattr(_ context.Context, name string, _ []byte) (uint32, syscall.Errno) {
	if strings.HasPrefix(name, "user.") {
		return 0, syscall.ENODATA
	}
	return 0, syscall.EOPNOTSUPP
}

type dirNode struct {
	node
	t *Tree
	d *dirData
}

var (
	_ = (fs.NodeLookuper)((*dirNode)(nil))
	_ = (fs.NodeGetattrer)((*dirNode)(nil))
	_ = (fs.NodeOpendirHandler)((*dirNode)(nil))
)

// Lookup finds name in the directory's index.
func (n *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	e, ok := n.d.byName[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	n.t.fill(e, &out.Attr)
	if e.dir != nil {
		return n.NewInode(ctx, &dirNode{t: n.t, d: e.dir}, fs.StableAttr{Mode: syscall.S_IFDIR, Ino: e.ino}), 0
	}
	return n.NewInode(ctx, &fileNode{t: n.t, e: e}, fs.StableAttr{Mode: syscall.S_IFREG, Ino: e.ino}), 0
}

// Getattr reports a directory.
func (n *dirNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.t.fill(&entry{ino: n.d.ino, dir: n.d}, &out.Attr)
	return 0
}

// OpendirHandle lists the directory and lets the kernel cache the listing.
func (n *dirNode) OpendirHandle(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return &dirHandle{n: n}, fuse.FOPEN_CACHE_DIR | fuse.FOPEN_KEEP_CACHE, 0
}

// dirHandle is a position in a directory's listing: 0 and 1 are "." and
// "..", i+2 is entry i.
type dirHandle struct {
	n   *dirNode
	pos int
}

var (
	_ = (fs.FileReaddirenter)((*dirHandle)(nil))
	_ = (fs.FileSeekdirer)((*dirHandle)(nil))
)

// Readdirent returns the next entry, or nil at the end.
func (h *dirHandle) Readdirent(context.Context) (*fuse.DirEntry, syscall.Errno) {
	de := fuse.DirEntry{Off: uint64(h.pos) + 1, Mode: syscall.S_IFDIR}
	switch {
	case h.pos == 0:
		de.Name, de.Ino = ".", h.n.d.ino
	case h.pos == 1:
		de.Name, de.Ino = "..", h.n.d.ino
	case h.pos-2 < len(h.n.d.ents):
		e := h.n.d.ents[h.pos-2]
		de.Name, de.Ino = e.name, e.ino
		if e.dir == nil {
			de.Mode = syscall.S_IFREG
		}
	default:
		return nil, 0
	}
	h.pos++
	return &de, 0
}

// Seekdir moves to the position after off.
func (h *dirHandle) Seekdir(_ context.Context, off uint64) syscall.Errno {
	h.pos = int(off)
	return 0
}

type fileNode struct {
	node
	t *Tree
	e *entry
}

var (
	_ = (fs.NodeGetattrer)((*fileNode)(nil))
	_ = (fs.NodeOpener)((*fileNode)(nil))
	_ = (fs.NodeReader)((*fileNode)(nil))
)

// Getattr reports the file.
func (f *fileNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.t.fill(f.e, &out.Attr)
	return 0
}

// Open keeps the kernel's cached pages, which never go stale.
func (f *fileNode) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read serves the file's bytes from memory.
func (f *fileNode) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	d := f.e.data
	if off >= int64(len(d)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(d[off:min(int64(len(d)), off+int64(len(dest)))]), 0
}
