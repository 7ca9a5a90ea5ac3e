package vfs

import (
	"context"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
)

// node is what every node of the mount embeds: its go-fuse inode, the
// mount's shared state, and the answers that are the same on every inode.
// LISTXATTR is left to go-fuse, whose answer for a node without a
// Listxattr method is the empty list the mount gives (see xattr.go).
type node struct {
	fs.Inode
	fsys *fsys
}

// Getxattr answers as a directory does: a node without attributes of its
// own (/.snapshots, a snapshot's directory) has none.
func (n *node) Getxattr(_ context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	return getxattr(store.Entry{Kind: store.KindDir}, name, dest)
}

// Statfs reports the mount's capacity and use (see fsys.statfs).
func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	return n.fsys.statfs(ctx, out)
}

// The methods below answer every operation that would change the
// filesystem with EROFS. The mount is read-only, so the kernel refuses
// these itself; they are a second line of defence (should the mount ever
// be remounted read-write) and make the answer EROFS rather than ENOSYS.
var (
	_ = (fs.NodeStatfser)((*node)(nil))
	_ = (fs.NodeGetxattrer)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
	_ = (fs.NodeSymlinker)((*node)(nil))
	_ = (fs.NodeLinker)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRmdirer)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeSetxattrer)((*node)(nil))
	_ = (fs.NodeRemovexattrer)((*node)(nil))
)

// Setattr refuses chmod, chown, truncate and utimes.
func (*node) Setattr(context.Context, fs.FileHandle, *fuse.SetAttrIn, *fuse.AttrOut) syscall.Errno {
	return syscall.EROFS
}

// Create refuses to create a file.
func (*node) Create(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EROFS
}

// Mkdir refuses to create a directory.
func (*node) Mkdir(context.Context, string, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Mknod refuses to create a device, fifo or socket.
func (*node) Mknod(context.Context, string, uint32, uint32, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Symlink refuses to create a symbolic link.
func (*node) Symlink(context.Context, string, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Link refuses to create a hard link.
func (*node) Link(context.Context, fs.InodeEmbedder, string, *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return nil, syscall.EROFS
}

// Unlink refuses to remove a file.
func (*node) Unlink(context.Context, string) syscall.Errno { return syscall.EROFS }

// Rmdir refuses to remove a directory.
func (*node) Rmdir(context.Context, string) syscall.Errno { return syscall.EROFS }

// Rename refuses to move an entry.
func (*node) Rename(context.Context, string, fs.InodeEmbedder, string, uint32) syscall.Errno {
	return syscall.EROFS
}

// Setxattr refuses to set an extended attribute.
func (*node) Setxattr(context.Context, string, []byte, uint32) syscall.Errno {
	return syscall.EROFS
}

// Removexattr refuses to remove an extended attribute.
func (*node) Removexattr(context.Context, string) syscall.Errno { return syscall.EROFS }
