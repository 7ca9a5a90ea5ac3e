package vfs

import (
	"context"
	"errors"
	"io"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
)

// fileNode is one version of a regular file: the entry as it was when the
// kernel looked it up. A newer version of the same path is a new fileNode
// (see stableAttr), so a fileNode never changes and is safe for concurrent
// use.
type fileNode struct {
	fs.Inode
	readOnly

	fsys  *fsys
	entry store.Entry
}

var (
	_ = (fs.NodeGetattrer)((*fileNode)(nil))
	_ = (fs.NodeOpener)((*fileNode)(nil))
)

// Getattr reports the attributes of this version of the file.
func (f *fileNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fsys.fillAttr(f.entry, &out.Attr)
	return 0
}

// writeFlags are the open flags that ask to change a file.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND | syscall.O_CREAT

// Open takes a snapshot of the file's content. The kernel keeps its page
// cache across opens (FOPEN_KEEP_CACHE): the inode is this version only, so
// its cached pages can never be stale. Closing sends no FLUSH
// (FOPEN_NOFLUSH): there is nothing to flush.
//
// If the store's content is no longer this version (the file changed after
// the kernel looked it up), Open fails with ESTALE; the kernel then looks
// the name up again, gets the new version's inode, and retries the open.
// That is also how a placeholder's open ends once its content has been
// fetched: the content is a new version, so the retried open reads it with
// the attributes of that version.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&writeFlags != 0 {
		return nil, 0, syscall.EROFS
	}
	p := f.entry.Path
	c, err := f.fsys.content(ctx, p)
	if err != nil {
		return nil, 0, f.fsys.errno("open", p, err)
	}
	if c.SHA256() != f.entry.SHA256 || c.Size() != f.entry.Size {
		c.Close()
		return nil, 0, syscall.ESTALE
	}
	return &fileHandle{fsys: f.fsys, path: p, content: c}, fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH, 0
}

// content returns the bytes of the file at path p as they are now. It is
// the one place an open obtains content. With Options.Fetcher, the Fetcher
// opens the file (so the store counts one use of it, not two) and, for a
// placeholder, blocks until the content arrives, the reader is interrupted
// (ctx), or the fetch times out.
func (fsys *fsys) content(ctx context.Context, p string) (store.Content, error) {
	if fsys.opts.Fetcher != nil {
		return fsys.opts.Fetcher.Fetch(ctx, p)
	}
	return fsys.st.Open(ctx, p)
}

// fileHandle is an open file: a content snapshot read one kernel-requested
// range at a time. Read is safe for concurrent use (store.Content.ReadAt
// is); the kernel calls Release once, after every Read has returned.
type fileHandle struct {
	fsys    *fsys
	path    string
	content store.Content
}

var (
	_ = (fs.FileReader)((*fileHandle)(nil))
	_ = (fs.FileReleaser)((*fileHandle)(nil))
)

// Read fills dest from offset off; short only at the end of the file.
func (h *fileHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.content.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, h.fsys.errno("read", h.path, err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Release closes the snapshot.
func (h *fileHandle) Release(context.Context) syscall.Errno {
	if err := h.content.Close(); err != nil {
		return h.fsys.errno("release", h.path, err)
	}
	return 0
}
