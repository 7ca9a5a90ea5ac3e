package vfs

import (
	"context"
	"slices"
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"

	"github.com/depotfs/depotfs/store"
)

// The provenance extended attributes, the only ones the filesystem has.
// They are read by name (getfattr -n) and not listed: no node has a
// Listxattr method, so go-fuse answers LISTXATTR with an empty list.
// Listed, they would be copied with the file by every program that
// preserves extended attributes (cp -a, rsync -X, tar --xattrs) onto a
// disk where they no longer describe anything, a copy calling itself
// "stored" with a hash no one checks. An attribute whose value is empty (a
// directory's hash, an unknown encoding) is absent.
const (
	XattrSHA256   = "user.depotfs.sha256"
	XattrSource   = "user.depotfs.source"
	XattrEncoding = "user.depotfs.encoding"
	// XattrState is "stored" for a file whose content depotfs holds and
	// "placeholder" for one it does not (listed but not sent, stale, or
	// evicted: opening it waits for an agent to send it). A scanner can
	// skip placeholders by this attribute, or by opening with O_NONBLOCK,
	// which fails at once with EAGAIN for a placeholder (and asks the
	// agents for it).
	XattrState = "user.depotfs.state"
	// XattrDeclaredSHA256 is, on a placeholder, the content hash an agent
	// declared for it (store.Entry.DeclaredSHA256): a scanner that keeps
	// verdicts by hash can judge a placeholder without its content.
	XattrDeclaredSHA256 = "user.depotfs.declared_sha256"
)

// The values of XattrState.
const (
	StateStored      = "stored"
	StatePlaceholder = "placeholder"
)

// xattrNames lists the provenance attributes.
var xattrNames = []string{XattrSHA256, XattrSource, XattrEncoding, XattrState, XattrDeclaredSHA256}

var (
	_ = (fs.NodeGetxattrer)((*fileNode)(nil))
	_ = (fs.NodeGetxattrer)((*dirNode)(nil))
)

// xattrValue returns the value of a provenance attribute of e.
func xattrValue(e store.Entry, name string) string {
	switch name {
	case XattrSHA256:
		return e.SHA256
	case XattrSource:
		return e.Source
	case XattrEncoding:
		return e.Encoding
	case XattrDeclaredSHA256:
		return e.DeclaredSHA256
	case XattrState:
		switch {
		case e.IsDir():
			return ""
		case e.Present:
			return StateStored
		}
		return StatePlaceholder
	}
	return ""
}

// getxattr answers GETXATTR: the value's size when dest is empty, ERANGE
// when dest is too small, ENODATA for a user.* attribute that is absent, and
// EOPNOTSUPP for any other namespace (security.*, system.*, trusted.*),
// which the filesystem does not support.
//
// EOPNOTSUPP matters for speed: ls -l asks every file for security.selinux
// and system.posix_acl_access, one FUSE round trip each that the kernel
// never caches, unless the answer is "not supported", which ls remembers
// for the whole filesystem.
func getxattr(e store.Entry, name string, dest []byte) (uint32, syscall.Errno) {
	v := xattrValue(e, name)
	if v == "" {
		return 0, absentXattr(name)
	}
	if len(dest) < len(v) {
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// absentXattr is the error for an attribute that has no value.
func absentXattr(name string) syscall.Errno {
	if strings.HasPrefix(name, "user.") {
		return syscall.ENODATA
	}
	return syscall.EOPNOTSUPP
}

// Getxattr returns a provenance attribute of this version of the file.
func (f *fileNode) Getxattr(_ context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	v, _ := f.snapshot()
	return getxattr(v.entry(), name, dest)
}

// Getxattr returns a provenance attribute of the directory.
func (d *dirNode) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	if !slices.Contains(xattrNames, name) {
		return 0, absentXattr(name) // not ours: no need to ask the store
	}
	e, err := d.stat(ctx)
	if err != nil {
		return 0, d.fsys.errno("getxattr", d.path, err)
	}
	return getxattr(e, name, dest)
}
