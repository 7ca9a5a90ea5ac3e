package vfs

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/depotfs/depotfs/internal/depotpath"
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
	// pruneAt is the size of byPath at which note drops the paths whose
	// blob the cache no longer holds (evicted since): without it byPath
	// grew by a path for every large file ever opened, whatever the
	// cache's bound. Twice the size after the last pruning, so pruning
	// costs O(1) a note.
	pruneAt, minPruneAt int

	prefetch chan store.Entry
}

func newBlobs(cache *blobcache.Cache, log *slog.Logger) *blobs {
	return &blobs{cache: cache, log: log, byPath: make(map[string]string), pruneAt: minPruneAt, minPruneAt: minPruneAt, prefetch: make(chan store.Entry, prefetchQueue)}
}

// wants reports whether the version e of a file is served from the cache.
func wants(e store.Entry) bool {
	return e.Kind == store.KindFile && e.Present && e.Size >= PassthroughMinSize
}

// minPruneAt is the smallest size of blobs.byPath that is pruned (a
// variable for tests).
var minPruneAt = 1024

// note records that p's content is the cached blob sum. It keeps copies:
// a listing's entries share one string (see store/bolt).
func (b *blobs) note(p, sum string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if old, ok := b.byPath[p]; !ok || old != sum {
		b.byPath[strings.Clone(p)] = strings.Clone(sum)
	}
	if len(b.byPath) < b.pruneAt {
		return
	}
	// A path whose blob was evicted has nothing to drop when it changes;
	// if the blob is filled again, its open notes the path again.
	for q, s := range b.byPath {
		if q != p && !b.cache.Has(s) {
			delete(b.byPath, q)
		}
	}
	b.pruneAt = max(2*len(b.byPath), b.minPruneAt)
}

// paths returns how many paths the mount remembers a cached blob for.
func (b *blobs) paths() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.byPath)
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

// retain, when the cache kept blobs from an earlier run, walks the store's
// tree once: it records which path each kept blob is the content of (so
// that a change to the path drops it, as for a blob filled in this run) and
// deletes the kept blobs no file of the store has any more. A kept blob is
// served meanwhile only to an open whose content the store says has its
// hash. A path changed during the walk may leave its old blob cached until
// the bound evicts it.
func (b *blobs) retain(ctx context.Context, st store.Store) {
	if b.cache.Stats().Kept == 0 {
		return
	}
	held := make(map[string]bool)
	if err := walkFiles(ctx, st, depotpath.Root, func(e store.Entry) {
		if wants(e) {
			held[e.SHA256] = true
			if b.cache.Has(e.SHA256) {
				b.note(e.Path, e.SHA256)
			}
		}
	}); err != nil {
		if !errors.Is(err, context.Canceled) {
			b.log.Warn("vfs: listing the store for the blob cache failed; blobs kept from the last run stay until evicted", "err", err)
		}
		return
	}
	if n := b.cache.Retain(func(sum string) bool { return held[sum] }); n > 0 {
		b.log.Info("vfs: blob cache: deleted blobs the store no longer holds", "blobs", n)
	}
}

// walkFiles calls fn for every file under dir, one directory at a time.
func walkFiles(ctx context.Context, st store.Store, dir string, fn func(store.Entry)) error {
	es, err := st.ReadDir(ctx, dir)
	if errors.Is(err, store.ErrNotExist) || errors.Is(err, store.ErrNotDir) {
		return nil // gone or replaced since its parent was listed
	}
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.IsDir() {
			if err := walkFiles(ctx, st, e.Path, fn); err != nil {
				return err
			}
		} else {
			fn(e)
		}
	}
	return nil
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
	return h.node.open.blob.Fd()
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
	h.node.releaseBlob()
	return 0
}

// BlobCacheStats are the counts of a mount's passthrough blob cache.
type BlobCacheStats struct {
	Blobs int   // blobs cached now
	Bytes int64 // bytes they take
	Max   int64 // the bound (Options.BlobCacheBytes)
	// Kept is the blobs the last run left that this mount kept (sealed
	// and unchanged since); Dropped is the ones it deleted instead.
	Kept, Dropped int
	Hits          uint64 // opens served from a cached blob without copying it
	Fills         uint64 // blobs copied in from the store
	Pruned        uint64 // kept blobs deleted because the store no longer held them
}

// BlobCacheStats returns the blob cache's counts; ok is false when
// passthrough is off (Passthrough).
func (m *Server) BlobCacheStats() (s BlobCacheStats, ok bool) {
	pt := m.inv.fsys.pt.Load()
	if pt == nil {
		return s, false
	}
	c := pt.cache.Stats()
	return BlobCacheStats{Blobs: c.Blobs, Bytes: c.Bytes, Max: pt.cache.Max(), Kept: c.Kept, Dropped: c.Dropped,
		Hits: c.Hits, Fills: c.Fills, Pruned: c.Pruned}, true
}
