package nfsserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"strings"
	"sync"

	billy "github.com/go-git/go-billy/v5"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// view is the billy filesystem go-nfs reads through: the export as it is
// now (rev 0), or, for the handle of a file version since replaced, that
// one path as of revision rev. It has no write capability, so go-nfs
// answers every write procedure with NFS3ERR_ROFS before calling it.
// Stateless; safe for concurrent use.
type view struct {
	s    *Server
	rev  uint64 // 0: live; else the revision of the one version it shows
	base string // the export path of its root: "" but for a client that mounted a subdirectory
}

// full returns the export path of p, a path of the view.
func (v *view) full(p string) string {
	switch {
	case v.base == "":
		return p
	case p == "":
		return v.base
	}
	return v.base + "/" + p
}

var (
	_ billy.Filesystem = (*view)(nil)
	_ billy.Capable    = (*view)(nil)
	_ billy.File       = (*file)(nil)
)

// Capabilities: read and seek, never write.
func (v *view) Capabilities() billy.Capability {
	return billy.ReadCapability | billy.SeekCapability
}

// Join joins names of the export into one path. A name with a slash or NUL
// in it keeps that as a bad name (see badName) rather than becoming two.
func (v *view) Join(elem ...string) string {
	var b strings.Builder
	for i, e := range elem {
		if i > 0 {
			b.WriteByte('/')
		}
		if strings.ContainsAny(e, "/\x00") {
			e = strings.NewReplacer("/", badName, "\x00", badName).Replace(e)
		}
		b.WriteString(e)
	}
	return b.String()
}

// Stat returns the attributes of path p.
func (v *view) Stat(p string) (os.FileInfo, error) {
	p = v.full(p)
	ctx := v.s.ctx
	l, err := v.s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	if v.rev != 0 {
		e, err := v.s.st.StatAt(ctx, l.depot, v.rev)
		if err != nil {
			return nil, pathErr("stat", p, err)
		}
		return v.s.newInfo(depotpath.Base(e.Path), e, inodeOf(e)), nil
	}
	e, ino, err := v.s.stat(ctx, l)
	if err != nil {
		return nil, pathErr("stat", p, err)
	}
	name := base(p)
	v.s.remember(p, l, ino)
	return v.s.newInfo(name, e, ino), nil
}

// Lstat is Stat: the depot has no symbolic links.
func (v *view) Lstat(p string) (os.FileInfo, error) { return v.Stat(p) }

// ReadDir lists directory p: only the names the grants show, and at the
// export root not the hidden .snapshots.
func (v *view) ReadDir(p string) ([]os.FileInfo, error) {
	p = v.full(p)
	ctx := v.s.ctx
	l, err := v.s.resolve(ctx, p)
	if err != nil {
		return nil, err
	}
	if v.rev != 0 {
		return nil, pathErr("readdir", p, store.ErrNotDir)
	}
	switch l.kind {
	case kindSnapshots:
		snaps, tops, err := v.s.snapshots(ctx)
		if err != nil {
			return nil, pathErr("readdir", p, err)
		}
		out := make([]os.FileInfo, 0, len(snaps))
		for i, sn := range snaps {
			cl := loc{kind: kindSnapshot, depot: tops[i], snap: sn, top: true}
			e, ino, err := v.s.stat(ctx, cl)
			if err != nil {
				continue // released since it was listed
			}
			v.s.remember(v.Join(p, sn.Name), cl, ino)
			out = append(out, v.s.newInfo(sn.Name, e, ino))
		}
		return out, nil
	case kindSnapshot:
		entries, err := v.s.st.ReadDirAt(ctx, l.depot, l.snap.Revision)
		if errors.Is(err, store.ErrNotExist) && l.top {
			entries, err = nil, nil
		}
		if err != nil {
			return nil, pathErr("readdir", p, err)
		}
		return v.infos(p, l, entries), nil
	}
	entries, err := v.s.st.ReadDir(ctx, l.depot)
	if errors.Is(err, store.ErrNotExist) && l.depot == v.s.acc.prefix {
		entries, err = nil, nil // an export prefix with nothing below it yet
	}
	if err != nil {
		return nil, pathErr("readdir", p, err)
	}
	return v.infos(p, l, entries), nil
}

// infos describes the entries of directory l (export path p) that the
// grants show.
func (v *view) infos(p string, l loc, entries []store.Entry) []os.FileInfo {
	out := make([]os.FileInfo, 0, len(entries))
	for _, e := range entries {
		if !v.s.acc.visible(e.Path) {
			continue
		}
		cl := loc{kind: l.kind, depot: e.Path, snap: l.snap}
		ino := inodeOf(e)
		if l.kind == kindSnapshot {
			ino = snapIno(l.snap, e)
		}
		name := depotpath.Base(e.Path)
		v.s.remember(v.Join(p, name), cl, ino)
		out = append(out, v.s.newInfo(name, e, ino))
	}
	return out
}

// Open opens file p for reading.
func (v *view) Open(p string) (billy.File, error) { return v.OpenFile(p, os.O_RDONLY, 0) }

// OpenFile opens file p for reading; any other flag is refused. The
// content is opened at the first read, so a placeholder's fetch happens
// there (see file.ReadAt).
func (v *view) OpenFile(p string, flag int, _ os.FileMode) (billy.File, error) {
	p = v.full(p)
	if flag&(os.O_WRONLY|os.O_RDWR|os.O_CREATE|os.O_TRUNC|os.O_APPEND) != 0 {
		return nil, pathErr("open", p, billy.ErrReadOnly)
	}
	l, err := v.s.resolve(v.s.ctx, p)
	if err != nil {
		return nil, err
	}
	if !v.s.acc.readable(l.depot) || l.kind == kindSnapshots {
		return nil, pathErr("open", p, iofs.ErrPermission)
	}
	return &file{v: v, name: p, l: l}, nil
}

// The write half of billy.Filesystem: the export is read-only.
func (v *view) Create(p string) (billy.File, error) {
	return nil, pathErr("create", p, billy.ErrReadOnly)
}
func (v *view) Rename(from, _ string) error { return pathErr("rename", from, billy.ErrReadOnly) }
func (v *view) Remove(p string) error       { return pathErr("remove", p, billy.ErrReadOnly) }
func (v *view) MkdirAll(p string, _ os.FileMode) error {
	return pathErr("mkdir", p, billy.ErrReadOnly)
}
func (v *view) TempFile(dir, _ string) (billy.File, error) {
	return nil, pathErr("create", dir, billy.ErrReadOnly)
}
func (v *view) Symlink(_, link string) error { return pathErr("symlink", link, billy.ErrReadOnly) }

// Readlink fails: the depot has no symbolic links.
func (v *view) Readlink(p string) (string, error) {
	return "", pathErr("readlink", p, billy.ErrNotSupported)
}

// Chroot is not offered: an export's root is its prefix.
func (v *view) Chroot(p string) (billy.Filesystem, error) {
	return nil, pathErr("chroot", p, billy.ErrNotSupported)
}

// Root is the export's root.
func (v *view) Root() string { return "/" }

// base is the last name of export path p ("" for the root).
func base(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// pathErr wraps err as an *fs.PathError; the store's sentinels already
// wrap fs.ErrNotExist and friends, which go-nfs maps to NFS statuses.
func pathErr(op, p string, err error) error {
	return &iofs.PathError{Op: "nfs " + op, Path: p, Err: err}
}

// file is an open file of the export. Its content is opened at the first
// read: for a placeholder, that read asks the agents for the content and
// waits for it (bounded by the fetcher's timeout), as an open in the mount
// does; a read that fails then answers NFS3ERR_IO. go-nfs opens and closes
// a file for every READ, so a file lives for one request.
type file struct {
	v    *view
	name string
	l    loc

	once sync.Once
	c    store.Content
	err  error
	off  int64 // for Read and Seek
}

func (f *file) content() (store.Content, error) {
	f.once.Do(func() { f.c, f.err = f.v.s.open(f.v.s.ctx, f.l, f.v.rev) })
	return f.c, f.err
}

// Name is the file's path in the export.
func (f *file) Name() string { return f.name }

// ReadAt reads from the content.
func (f *file) ReadAt(b []byte, off int64) (int, error) {
	c, err := f.content()
	if err != nil {
		return 0, pathErr("read", f.name, err)
	}
	return c.ReadAt(b, off)
}

// Read reads at the file's offset.
func (f *file) Read(b []byte) (int, error) {
	n, err := f.ReadAt(b, f.off)
	f.off += int64(n)
	return n, err
}

// Seek moves the file's offset.
func (f *file) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += f.off
	case io.SeekEnd:
		c, err := f.content()
		if err != nil {
			return 0, pathErr("seek", f.name, err)
		}
		off += c.Size()
	}
	if off < 0 {
		return 0, pathErr("seek", f.name, iofs.ErrInvalid)
	}
	f.off = off
	return off, nil
}

// Close releases the content.
func (f *file) Close() error {
	f.once.Do(func() {}) // a file never read opens nothing
	if f.c != nil {
		return f.c.Close()
	}
	return nil
}

// The write half of billy.File: the export is read-only.
func (f *file) Write([]byte) (int, error) { return 0, pathErr("write", f.name, billy.ErrReadOnly) }
func (f *file) Truncate(int64) error      { return pathErr("truncate", f.name, billy.ErrReadOnly) }
func (f *file) Lock() error               { return nil }
func (f *file) Unlock() error             { return nil }

// open returns the content at l (of the version at rev, when not 0). A
// live placeholder is fetched through the fetcher, which waits for the
// content to arrive (bounded by its timeout).
func (s *Server) open(ctx context.Context, l loc, rev uint64) (store.Content, error) {
	switch {
	case rev != 0:
		return s.st.OpenAt(ctx, l.depot, rev)
	case l.kind == kindSnapshot:
		return s.st.OpenAt(ctx, l.depot, l.snap.Revision)
	}
	c, err := s.st.Open(ctx, l.depot)
	if errors.Is(err, store.ErrNotPresent) && s.opts.Fetcher != nil {
		s.log.Info("nfs: reading a placeholder: asking agents for its content", "path", l.depot)
		c, err = s.opts.Fetcher.Fetch(ctx, l.depot)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", l.depot, err)
	}
	return c, nil
}
