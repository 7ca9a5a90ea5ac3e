package nfsserver

import (
	iofs "io/fs"
	"time"

	nfsfile "github.com/willscott/go-nfs/file"

	"github.com/depotfs/depotfs/store"
)

// Default permission bits, as the mount shows them before the umask
// (vfs.DefaultFileMode, vfs.DefaultDirMode).
const (
	defaultFileMode iofs.FileMode = 0o444
	defaultDirMode  iofs.FileMode = 0o555
)

// dirSize is the size every directory reports, as the mount does.
const dirSize = 4096

// info is an entry as the export shows it: the mount's attributes (size,
// mode, mtime, one link, the owner the operator named) under the door's
// shared inode number. It implements fs.FileInfo; go-nfs reads the inode
// number, owner and link count from Sys.
type info struct {
	name  string
	e     store.Entry
	ino   uint64
	mode  iofs.FileMode
	mtime time.Time
	sys   nfsfile.FileInfo
}

func (i *info) Name() string { return i.name }
func (i *info) Size() int64 {
	if i.e.IsDir() {
		return dirSize
	}
	return max(i.e.Size, 0)
}
func (i *info) Mode() iofs.FileMode { return i.mode }
func (i *info) ModTime() time.Time  { return i.mtime }
func (i *info) IsDir() bool         { return i.e.IsDir() }
func (i *info) Sys() any            { return i.sys }

// newInfo describes entry e, named name, under inode number ino.
func (s *Server) newInfo(name string, e store.Entry, ino uint64) *info {
	p := e.Mode.Perm()
	if p == 0 {
		p = defaultFileMode
		if e.IsDir() {
			p = defaultDirMode
		}
	}
	mode := p &^ 0o222 &^ s.opts.Umask.Perm()
	if e.IsDir() {
		mode |= iofs.ModeDir
	}
	mtime := e.MTime
	if mtime.IsZero() || mtime.Before(time.Unix(0, 0)) {
		mtime = s.started
	}
	return &info{name: name, e: e, ino: ino, mode: mode, mtime: mtime,
		sys: nfsfile.FileInfo{Nlink: 1, UID: s.opts.UID, GID: s.opts.GID, Fileid: ino}}
}
