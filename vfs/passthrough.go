package vfs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// PassthroughMinSize is the smallest file served through FUSE passthrough.
// A smaller file takes one READ round trip anyway, and copying it into the
// blob cache would cost more than it saves.
const PassthroughMinSize = 256 << 10

// prefetchQueue bounds the blobs waiting to be copied into the cache after
// a write; further ones are skipped (filled on their first open instead).
const prefetchQueue = 256

// blobs is the passthrough state of a mount: the blob cache, which blob
// each path was last served from (so that a change to the path drops it),
// and the queue of blobs to copy in ahead of their first open. Safe for
// concurrent use.
type blobs struct {
	cache *blobcache.Cache
	log   *slog.Logger

	mu     sync.Mutex
	byPath map[string]string // depot path → SHA-256 of the blob cached for it

	prefetch chan store.Entry
}

func newBlobs(cache *blobcache.Cache, log *slog.Logger) *blobs {
	return &blobs{cache: cache, log: log, byPath: make(map[string]string), prefetch: make(chan store.Entry, prefetchQueue)}
}

// wants reports whether the version e of a file is served from the cache.
func wants(e store.Entry) bool {
	return e.Kind == store.KindFile && e.Present && e.Size >= PassthroughMinSize
}

// note records that p's content is the cached blob sum.
func (b *blobs) note(p, sum string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.byPath[p] = sum
}

// changed drops the blob cached for p, if any, unless it is still p's
// content (sum): the store may have deleted it. A blob that other paths
// share is dropped too, and filled again on their next open.
func (b *blobs) changed(p, sum string) {
	b.mu.Lock()
	old, ok := b.byPath[p]
	if ok && old != sum {
		delete(b.byPath, p)
	}
	b.mu.Unlock()
	if ok && old != sum {
		b.cache.Remove(old)
	}
}

// open returns the cached blob for the version e of a file, filling it from
// c, which must be that version's content, when it is not cached yet.
func (b *blobs) open(ctx context.Context, e store.Entry, c store.Content) (*os.File, error) {
	f, ok := b.cache.Get(e.SHA256)
	if !ok {
		var err error
		if f, err = b.cache.Fill(ctx, c); err != nil {
			return nil, err
		}
	}
	b.note(e.Path, e.SHA256)
	return f, nil
}

// queue asks for the blob of a file just written to be copied into the
// cache, so that its first reader already reads it through passthrough.
// It never blocks: when the queue is full, the blob is filled on first open.
func (b *blobs) queue(e store.Entry) {
	if !wants(e) || b.cache.Has(e.SHA256) {
		return
	}
	select {
	case b.prefetch <- e:
	default:
	}
}

// runPrefetch copies queued blobs into the cache until ctx is done.
func (b *blobs) runPrefetch(ctx context.Context, st store.Store) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.prefetch:
			b.fetch(ctx, st, e)
		}
	}
}

func (b *blobs) fetch(ctx context.Context, st store.Store, e store.Entry) {
	c, err := st.Open(ctx, e.Path)
	if err != nil {
		return // changed or gone since: its own event says so
	}
	defer c.Close()
	if c.SHA256() != e.SHA256 {
		return
	}
	f, err := b.cache.Fill(ctx, c)
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, blobcache.ErrTooLarge) {
			b.log.Warn("vfs: copying a file into the blob cache failed", "path", e.Path, "err", err)
		}
		return
	}
	f.Close()
	b.note(e.Path, e.SHA256)
}

// blobHandle is an open file served from its version's blob file (shared
// by every open handle of the inode): by the kernel directly when
// passthrough is on, else by Read from the file.
type blobHandle struct {
	node *fileNode
}

var (
	_ = (fs.FilePassthroughFder)((*blobHandle)(nil))
	_ = (fs.FileReader)((*blobHandle)(nil))
	_ = (fs.FileReleaser)((*blobHandle)(nil))
)

// fd returns the blob file's descriptor; the handle keeps it open.
func (h *blobHandle) fd() uintptr {
	h.node.mu.Lock()
	defer h.node.mu.Unlock()
	return h.node.blob.Fd()
}

// PassthroughFd gives the kernel the blob file to read from.
func (h *blobHandle) PassthroughFd() (int, bool) { return int(h.fd()), true }

// Read reads from the blob file, for a kernel that did not take the file
// for passthrough.
func (h *blobHandle) Read(_ context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return fuse.ReadResultFd(h.fd(), off, len(dest)), 0
}

// Release drops the handle's share of the blob file.
func (h *blobHandle) Release(context.Context) syscall.Errno {
	if err := h.node.releaseBlob(); err != nil {
		h.node.fsys.log.Warn("vfs: closing a blob file failed", "path", h.node.version.path, "err", err)
	}
	return 0
}
