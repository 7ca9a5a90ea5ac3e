package vfs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// fileNode is one version of a regular file: the entry as it was when the
// kernel looked it up (see fileVersion). A newer version of the same path is a new fileNode
// (see stableAttr), so its entry never changes. It is safe for concurrent
// use.
type fileNode struct {
	fs.Inode
	readOnly

	fsys    *fsys
	version fileVersion

	mu       sync.Mutex
	blob     *os.File    // the blob file open handles share (passthrough); nil when none is open
	blobRefs int32       // open handles on blob
	primed   atomic.Bool // the content was handed to the kernel's page cache (prime)
}

var (
	_ = (fs.NodeGetattrer)((*fileNode)(nil))
	_ = (fs.NodeOpener)((*fileNode)(nil))
)

// Getattr reports the attributes of this version of the file.
func (f *fileNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fsys.fillAttr(f.version.entry(), &out.Attr)
	return 0
}

// writeFlags are the open flags that ask to change a file.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND | syscall.O_CREAT

// Open takes a snapshot of the file's content. The kernel keeps its page
// cache across opens (FOPEN_KEEP_CACHE): the inode is this version only, so
// its cached pages can never be stale. Closing sends no FLUSH
// (FOPEN_NOFLUSH): there is nothing to flush. With passthrough on, a file
// of at least PassthroughMinSize is served from its blob file, which the
// kernel reads directly.
//
// If the store's content is no longer this version (the file changed after
// the kernel looked it up), the reader gets the newer version, whole: it
// is read around the page cache and the size of this inode
// (FOPEN_DIRECT_IO), which belong to the older version. A reader therefore
// sees one version or another, never an error and never a mix. A
// placeholder is the exception: its open fails with ESTALE once the
// content has been fetched, and the kernel looks the name up again and
// retries, so the reader also gets the new version's attributes. An open
// with O_NONBLOCK never waits for a placeholder's content: it fails at
// once with EAGAIN.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&writeFlags != 0 {
		return nil, 0, syscall.EROFS
	}
	const cached = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	const direct = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
	p := f.version.path
	// The store is asked even when the blob is cached: the open counts as
	// a use of the content (eviction spares it), and says whether this
	// version is still the file's.
	var c store.Content
	var err error
	if flags&syscall.O_NONBLOCK != 0 {
		// Never wait for an agent: a placeholder fails at once.
		c, err = f.fsys.st.Open(ctx, p)
		if errors.Is(err, store.ErrNotPresent) {
			return nil, 0, syscall.EAGAIN
		}
	} else {
		c, err = f.fsys.content(ctx, p)
	}
	if err != nil {
		return nil, 0, f.fsys.errno("open", p, err)
	}
	current := c.SHA256() == f.version.sha256() && c.Size() == f.version.size
	if !current && !f.version.present {
		c.Close()
		return nil, 0, syscall.ESTALE
	}
	if pt := f.fsys.pt.Load(); pt != nil && wants(f.version.entry()) {
		h, err := f.openBlob(ctx, pt, c, current)
		if h != nil {
			c.Close()
			return h, cached, 0
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, blobcache.ErrTooLarge) {
			f.fsys.log.Warn("vfs: blob cache unavailable; reading from the store", "path", p, "err", err)
		}
		// The kernel refuses to mix passthrough and page-cache opens of
		// one inode: a file that may be opened for passthrough is read
		// around the page cache when it is not.
		return &fileHandle{fsys: f.fsys, path: p, content: c}, direct, 0
	}
	if !current {
		return &fileHandle{fsys: f.fsys, path: p, content: c}, direct, 0
	}
	f.prime(c)
	return &fileHandle{fsys: f.fsys, path: p, content: c}, cached, 0
}

// primeMax bounds the files whose content Open hands to the kernel (see
// prime); a larger file's first READ brings a whole MiB anyway.
const primeMax = 128 << 10

// prime stores the content of a small file in the kernel's page cache for
// this inode (FUSE_NOTIFY_STORE), once, before the first open of it
// returns: the reader's first read is then served from the page cache
// instead of costing a READ round trip. The inode is this version only, so
// the pages can never be stale; if the kernel drops them later, reads ask
// for them as usual. c must be this version's content.
func (f *fileNode) prime(c store.Content) {
	size := f.version.size
	if size <= 0 || size > primeMax || f.primed.Swap(true) {
		return
	}
	buf := make([]byte, size)
	if n, err := c.ReadAt(buf, 0); int64(n) != size {
		f.primed.Store(false)
		if err != nil && !errors.Is(err, io.EOF) {
			f.fsys.log.Debug("vfs: reading a file to prime the page cache failed", "path", f.version.path, "err", err)
		}
		return
	}
	if errno := f.WriteCache(0, buf); errno != 0 {
		f.primed.Store(false)
		f.fsys.log.Debug("vfs: priming the page cache failed", "path", f.version.path, "err", errno)
	}
}

// openBlob returns a handle on this version's blob file for passthrough,
// or nil when there is none to give. Every open of the inode shares one
// blob file while any is open (the kernel allows one backing file per
// inode); the first fills it from c when c is this version (current),
// else takes it from the cache if it is still there.
func (f *fileNode) openBlob(ctx context.Context, pt *blobs, c store.Content, current bool) (*blobHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.blob == nil {
		switch {
		case current:
			bf, err := pt.open(ctx, f.version.entry(), c)
			if err != nil {
				return nil, err
			}
			f.blob = bf
		default:
			bf, ok := pt.cache.Get(f.version.sha256())
			if !ok {
				return nil, nil
			}
			f.blob = bf
		}
	}
	f.blobRefs++
	return &blobHandle{node: f}, nil
}

// releaseBlob drops one handle's share of the blob file.
func (f *fileNode) releaseBlob() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blobRefs--
	if f.blobRefs > 0 {
		return nil
	}
	err := f.blob.Close()
	f.blob = nil
	return err
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
