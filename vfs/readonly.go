package vfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// readOnly answers every operation that would change the filesystem with
// EROFS. The mount is read-only, so the kernel refuses these itself; the
// methods are a second line of defence (should the mount ever be remounted
// read-write) and make the answer EROFS rather than ENOSYS. Embedded in
// every node; it has no state.
type readOnly struct{}

var (
	_ = (fs.NodeSetattrer)((*readOnly)(nil))
	_ = (fs.NodeCreater)((*readOnly)(nil))
	_ = (fs.NodeMkdirer)((*readOnly)(nil))
	_ = (fs.NodeMknoder)((*readOnly)(nil))
	_ = (fs.NodeSymlinker)((*readOnly)(nil))
	_ = (fs.NodeLinker)((*readOnly)(nil))
	_ = (fs.NodeUnlinker)((*readOnly)(nil))
	_ = (fs.NodeRmdirer)((*readOnly)(nil))
	_ = (fs.NodeRenamer)((*readOnly)(nil))
	_ = (fs.NodeSetxattrer)((*readOnly)(nil))
	_ = (fs.NodeRemovexattrer)((*readOnly)(nil))
	_ = (fs.NodeSetattrer)((*dirNode)(nil))
	_ = (fs.NodeSetattrer)((*fileNode)(nil))
	_ = (fs.NodeCreater)((*dirNode)(nil))
	_ = (fs.NodeMkdirer)((*dirNode)(nil))
	_ = (fs.NodeMknoder)((*dirNode)(nil))
	_ = (fs.NodeSymlinker)((*dirNode)(nil))
	_ = (fs.NodeLinker)((*dirNode)(nil))
	_ = (fs.NodeUnlinker)((*dirNode)(nil))
	_ = (fs.NodeRmdirer)((*dirNode)(nil))
	_ = (fs.NodeRenamer)((*dirNode)(nil))
	_ = (fs.NodeSetxattrer)((*dirNode)(nil))
	_ = (fs.NodeSetxattrer)((*fileNode)(nil))
	_ = (fs.NodeRemovexattrer)((*dirNode)(nil))
	_ = (fs.NodeRemovexattrer)((*fileNode)(nil))
)

// Setattr refuses chmod, chown, truncate and utimes.
func (readOnly) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

// Create refuses to create a file.
func (readOnly) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

// Mkdir refuses to create a directory.
func (readOnly) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Mknod refuses to create a device, fifo or socket.
func (readOnly) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Symlink refuses to create a symbolic link.
func (readOnly) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Link refuses to create a hard link.
func (readOnly) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Unlink refuses to remove a file.
func (readOnly) Unlink(context.Context, string) syscall.Errno { return syscall.EROFS }

// Rmdir refuses to remove a directory.
func (readOnly) Rmdir(context.Context, string) syscall.Errno { return syscall.EROFS }

// Rename refuses to move an entry.
func (readOnly) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return syscall.EROFS
}

// Setxattr refuses to set an extended attribute.
func (readOnly) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return syscall.EROFS
}

// Removexattr refuses to remove an extended attribute.
func (readOnly) Removexattr(context.Context, string) syscall.Errno { return syscall.EROFS }
