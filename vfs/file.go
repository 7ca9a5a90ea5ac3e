package vfs

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// fileNode is one version of a regular file, as the kernel sees it: the
// entry as it was when the kernel looked it up (see fileVersion). A newer
// version of the same path is a new fileNode (see stableAttr), except when
// it has the same content or extends it (see follow): then the node
// follows it and the inode stays. It is safe for concurrent use.
//
// The kernel may know hundreds of thousands of files, and go-fuse keeps a
// node for each, most of them never opened: what only an open needs is
// apart (opened), and the fields are laid out to fit the 288-byte size
// class (TestFileNodeSize).
type fileNode struct {
	node
	// mu guards every field below it except primer (atomic).
	mu     sync.Mutex
	primer primer
	gone   bool // replaced by an unrelated version, or removed: link count 0
	// cached: the node followed a newer version (see follow) and is
	// served through the page cache from then on; passed: a handle was
	// once served by passthrough, so the node never follows a newer
	// version. The kernel ties an inode to one backing file, or to the
	// page cache, until the RELEASE of its last open file is answered,
	// which is after fileNode knows the handle is closed: an inode that
	// changed content and mode in between would fail opens with EIO (or
	// read the older backing file).
	cached, passed bool
	version        fileVersion // what the node shows (see follow)
	open           *opened     // nil until the node is first opened or keeps content (see opened)
}

// opened is what a fileNode keeps of its open handles and the content
// they share, allocated the first time it has any: most nodes a walk
// makes are never opened.
type opened struct {
	opens    int32    // open handles, of either kind
	blobRefs int32    // open handles on blob
	shared   *shared  // the content the open fileHandles of the version shown share; nil when none is open
	blob     *os.File // the blob file open handles share (passthrough); nil when none is open
}

// opened returns the node's open state, allocating it on first use. f.mu
// must be held, or the node not yet be in the tree.
func (f *fileNode) opened() *opened {
	if f.open == nil {
		f.open = new(opened)
	}
	return f.open
}

// opensLocked is the number of open handles. f.mu must be held.
func (f *fileNode) opensLocked() int32 {
	if f.open == nil {
		return 0
	}
	return f.open.opens
}

var (
	_ = (fs.NodeGetattrer)((*fileNode)(nil))
	_ = (fs.NodeOpener)((*fileNode)(nil))
)

// Getattr reports the attributes of the version the node shows. A node
// that a newer version replaced, or whose file was removed, has a link
// count of 0, like an open file on a local filesystem after a
// rename-replace or an unlink.
func (f *fileNode) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fillAttr(&out.Attr)
	return 0
}

// fillAttr reports the version the node shows, under the node's own inode
// number (that of the first version it showed).
func (f *fileNode) fillAttr(out *fuse.Attr) {
	v, gone := f.snapshot()
	f.fsys.fillAttr(v.entry(), out)
	out.Ino = f.StableAttr().Ino
	if gone {
		out.Nlink = 0
	}
}

// writeFlags are the open flags that ask to change a file.
const writeFlags = syscall.O_WRONLY | syscall.O_RDWR | syscall.O_TRUNC | syscall.O_APPEND | syscall.O_CREAT

// openTries bounds how often Open starts again when the node changed
// version while it was opening.
const openTries = 3

// pageSize is the kernel's page size, for invalidating the pages from a
// file's old end.
var pageSize = int64(os.Getpagesize())

// Open takes a snapshot of the file's content. The kernel keeps its page
// cache across opens (FOPEN_KEEP_CACHE): the node's cached pages belong
// to the content it shows, which only ever grows (see follow), so they can
// never be stale. Closing sends no FLUSH (FOPEN_NOFLUSH): there is
// nothing to flush. With passthrough on, a file of at least
// PassthroughMinSize is served from its blob file, which the kernel reads
// directly.
//
// The attributes the opener sees are always those of the version it
// reads. If the store's content is no longer the node's (the kernel
// resolved the name before an update it has not been told of yet, or just
// as it was told), the open reads the node's own version when that is
// still at hand (see openOld; a node looked up while its file was being
// updated holds it for a while, see keep): what a stat just before the
// open showed, as a local filesystem opens the file a path resolved to
// before a rename-replace. Else the node follows the newer version when it
// can (the newer one extends its content; on a shared store, also when no
// handle of the node is open), and the node's attributes and pages are
// invalidated before Open returns. Else the open fails with ESTALE, on
// which the kernel looks the name up again and retries once, reaching a
// node that holds the version its lookup answered (see keep and
// fsys.stale: the retry's lookup always keeps, however long ago the
// file last changed). A
// placeholder's node takes the content that arrived for it (see filled):
// the opener waited for that content, and keeps the inode it looked up.
//
// An open with O_NONBLOCK never waits for a placeholder's content: it
// asks for it (Fetcher.Want) and fails at once with EAGAIN.
func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&writeFlags != 0 {
		return nil, 0, syscall.EROFS
	}
	for range openTries {
		v, _ := f.snapshot()
		c, errno := f.fsys.openContent(ctx, v.path, flags)
		if errno != 0 {
			return nil, 0, errno
		}
		if !v.holds(c) {
			h, fl, errno := f.openOld(ctx, v)
			if h != nil || errno != 0 {
				c.Close()
				if errno == errMoved {
					continue
				}
				return h, fl, errno
			}
			var ok bool
			if v, ok = f.catchUp(ctx, v, c); !ok {
				c.Close()
				if v.rev == 0 {
					continue // the node moved on meanwhile: look again
				}
				return nil, 0, f.fsys.stale(v.path)
			}
		}
		h, flags, errno := f.serve(ctx, v, c)
		if errno == errMoved {
			continue
		}
		return h, flags, errno
	}
	return nil, 0, f.fsys.stale(f.path())
}

// errMoved is serve's answer when the node moved on to another version
// while it was opening: Open starts again.
const errMoved = syscall.EAGAIN

// openContent returns the content of the file at p as it is now. An open
// with O_NONBLOCK of a placeholder fails with EAGAIN, after asking for its
// content.
func (fsys *fsys) openContent(ctx context.Context, p string, flags uint32) (store.Content, syscall.Errno) {
	if flags&syscall.O_NONBLOCK == 0 {
		c, err := fsys.content(ctx, p)
		if err != nil {
			return nil, fsys.errno("open", p, err)
		}
		return c, 0
	}
	// Never wait for an agent: a placeholder fails at once, once asked for.
	c, err := fsys.st.Open(ctx, p)
	if errors.Is(err, store.ErrNotPresent) {
		if fsys.opts.Fetcher != nil {
			if err := fsys.opts.Fetcher.Want(ctx, p); err != nil {
				fsys.log.Debug("vfs: asking for a placeholder's content failed", "path", p, "err", err)
			}
		}
		return nil, syscall.EAGAIN
	}
	if err != nil {
		return nil, fsys.errno("open", p, err)
	}
	return c, 0
}

// catchUp makes the node follow the newer version whose content is c, if
// it can (see follow), and tells the kernel what changed before the open
// returns. It returns the version the node shows and true when that is
// c's; false with the zero version when the node or the store moved on
// meanwhile (Open looks again); and
// false with the node's version when the node stays an older version.
func (f *fileNode) catchUp(ctx context.Context, v fileVersion, c store.Content) (fileVersion, bool) {
	e, err := f.fsys.st.Stat(ctx, v.path)
	if err == nil && !e.IsDir() && (e.SHA256 != c.SHA256() || e.Size != c.Size()) {
		// Another update landed after c was opened: c is already old, so
		// open again rather than send the kernel a second ESTALE it
		// would not retry.
		return fileVersion{}, false
	}
	if err != nil || e.IsDir() {
		return v, false
	}
	// A node that nothing of its version is left for takes the newer
	// version only on a shared store (close-to-open wants the newest
	// there). Elsewhere a program may have been given its attributes
	// already (stat, then open): the open fails with ESTALE instead, and
	// the kernel's retry looks the name up again and reaches a new node
	// that holds its version (see keep).
	res, old := f.follow(ctx, e, c, f.fsys.opts.Shared)
	f.fsys.log.Debug("vfs: an open raced an update", "path", v.path, "revision", v.rev, "store_revision", e.Revision, "outcome", res)
	switch res {
	case grew:
		f.notify(v.path, old&^(pageSize-1))
	case retargeted, filled:
		f.notify(v.path, 0)
	case kept:
		return fileVersion{}, false
	case replaced, refreshed:
		if nv, _ := f.snapshot(); nv.rev != v.rev {
			// Another open moved the node on since v was taken: what
			// it shows now may still be at hand.
			return fileVersion{}, false
		}
		return v, false
	}
	nv, _ := f.snapshot()
	return nv, nv.holds(c)
}

// notify invalidates the node's attributes and its pages from off (none
// when off is negative), from inside a FUSE request: the kernel holds no
// lock an OPEN's reply would release.
func (f *fileNode) notify(p string, off int64) {
	if errno := f.NotifyContent(off, 0); errno != 0 && errno != syscall.ENOENT {
		f.fsys.log.Debug("vfs: invalidating a file that follows a newer version failed", "path", p, "err", errno)
	}
}

// serve returns the handle for an open of version v, whose content is c
// (serve takes it).
func (f *fileNode) serve(ctx context.Context, v fileVersion, c store.Content) (fs.FileHandle, uint32, syscall.Errno) {
	const cached = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	const direct = fuse.FOPEN_DIRECT_IO | fuse.FOPEN_NOFLUSH
	if pt := f.fsys.pt.Load(); pt != nil && wants(v.entry()) && !f.isCached() {
		bh, err := f.openBlob(ctx, pt, c, v)
		if bh != nil {
			c.Close()
			return bh, cached, 0
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, blobcache.ErrTooLarge) {
			f.fsys.log.Warn("vfs: blob cache unavailable; reading from the store", "path", v.path, "err", err)
		}
		// The kernel refuses to mix passthrough and page-cache opens of
		// one inode: a file that may be opened for passthrough is read
		// around the page cache when it is not (FUSE_DIRECT_IO_ALLOW_MMAP
		// still lets programs map it).
		h := f.newHandle(v, c)
		if h == nil {
			return nil, 0, errMoved
		}
		return h, direct, 0
	}
	h := f.newHandle(v, c)
	if h == nil {
		return nil, 0, errMoved
	}
	f.primer.prime(&f.node, h.s, v.path)
	return h, cached, 0
}

// isCached reports whether the node is served through the page cache
// only (see fileNode.cached).
func (f *fileNode) isCached() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cached
}

// openOld serves an open of the node's version v when the store has a
// newer one, from what is still at hand of v: the content its handles
// share (kept for lingerFor after the last closes, or since a lookup
// replaced an older node, see keep), v's blob file (open, or still in the
// blob cache), or v as the store retains it (see store.Versions). It
// returns no handle and no error when nothing of v is at hand, and
// errMoved when the node moved on meanwhile. With Options.Shared nothing
// is ever at hand.
func (f *fileNode) openOld(ctx context.Context, v fileVersion) (fs.FileHandle, uint32, syscall.Errno) {
	// On a shared store the newer version may be another host's, whose
	// writer answered before this kernel was told of it: an open that
	// began after that answer must read it (close-to-open across hosts).
	if !v.present || f.fsys.opts.Shared {
		return nil, 0, 0
	}
	const cached = fuse.FOPEN_KEEP_CACHE | fuse.FOPEN_NOFLUSH
	pt := f.fsys.pt.Load()
	if pt == nil || !wants(v.entry()) || f.isCached() {
		if h := f.shareHandle(v); h != nil {
			return h, cached, 0
		}
	} else {
		// While one open of an inode reads through passthrough, the
		// kernel fails every other open of it that does not.
		if bh, _ := f.openBlob(ctx, pt, nil, v); bh != nil {
			return bh, cached, 0
		}
		if h := f.shareHandle(v); h != nil {
			bh, _ := f.openBlob(ctx, pt, h.s.Content, v)
			h.Release(ctx)
			if bh != nil {
				return bh, cached, 0
			}
		}
	}
	c, err := f.fsys.st.OpenAt(ctx, v.path, v.rev)
	if err != nil {
		return nil, 0, 0
	}
	if !v.holds(c) {
		c.Close()
		return nil, 0, 0
	}
	return f.serve(ctx, v, c)
}

// primeMax bounds the files whose content Open hands to the kernel (see
// primer); a larger file's first READ brings a whole MiB anyway.
const primeMax = 128 << 10

// primer hands a small file's content to the kernel's page cache for a
// file node, live (fileNode) or of a snapshot (snapFile). It is a field
// apart from the node (rather than embedding it) so that the fileNode's
// flags share its word.
type primer struct {
	primed atomic.Bool // the content was handed to the kernel's page cache
}

// prime stores the content of a small file in the kernel's page cache for
// this inode (FUSE_NOTIFY_STORE), once, before the first open of it
// returns: the reader's first read is then served from the page cache
// instead of costing a READ round trip. The node's content only ever grows
// (a snapshot's never changes), so the pages can never be stale; if the
// kernel drops them later, reads ask for them as usual. c must be the
// content the node n shows, of the file at p.
func (f *primer) prime(n *node, c store.Content, p string) {
	size := c.Size()
	if size <= 0 || size > primeMax || f.primed.Swap(true) {
		return
	}
	buf := make([]byte, size)
	if got, err := c.ReadAt(buf, 0); int64(got) != size {
		f.primed.Store(false)
		if err != nil && !errors.Is(err, io.EOF) {
			n.fsys.log.Debug("vfs: reading a file to prime the page cache failed", "path", p, "err", err)
		}
		return
	}
	if errno := n.WriteCache(0, buf); errno != 0 {
		f.primed.Store(false)
		n.fsys.log.Debug("vfs: priming the page cache failed", "path", p, "err", errno)
	}
}

// openBlob returns a handle on version v's blob file for passthrough, or
// nil when there is none to give (or the node no longer shows v). Every
// open of the inode shares one blob file while any is open (the kernel
// allows one backing file per inode); the first fills it from c, v's
// content, or when c is nil takes it from the cache if it is still there.
func (f *fileNode) openBlob(ctx context.Context, pt *blobs, c store.Content, v fileVersion) (*blobHandle, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.version.same(v) {
		return nil, nil
	}
	o := f.opened()
	if o.blob == nil {
		var bf *os.File
		var err error
		if c != nil {
			bf, err = pt.open(ctx, v.entry(), c)
		} else if bf, _ = pt.cache.Get(v.sha256()); bf == nil {
			return nil, nil // not cached any more
		}
		if err != nil {
			return nil, err
		}
		o.blob, f.passed = bf, true
	}
	o.blobRefs++
	o.opens++
	return &blobHandle{node: f}, nil
}

// releaseBlob drops one handle's share of the blob file. The last keeps
// it open for lingerFor (see lingerFor).
func (f *fileNode) releaseBlob() {
	f.mu.Lock()
	defer f.mu.Unlock()
	o := f.open
	o.opens--
	o.blobRefs--
	if o.blobRefs > 0 {
		return
	}
	bf := o.blob
	time.AfterFunc(lingerFor, func() { f.expireBlob(bf) })
}

// expireBlob closes the blob file bf if no handle took it up again.
func (f *fileNode) expireBlob(bf *os.File) {
	f.mu.Lock()
	if o := f.open; o.blob != bf || o.blobRefs > 0 {
		f.mu.Unlock()
		return
	}
	f.open.blob = nil
	f.mu.Unlock()
	if err := bf.Close(); err != nil {
		f.fsys.log.Warn("vfs: closing a blob file failed", "path", f.path(), "err", err)
	}
}

// path returns the file's depot path.
func (f *fileNode) path() string {
	v, _ := f.snapshot()
	return v.path
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
