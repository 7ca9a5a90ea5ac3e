package blobcache

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ErrTooLarge reports a blob bigger than the whole cache.
var ErrTooLarge = errors.New("blobcache: blob larger than the cache")

// ErrCorrupt reports content whose bytes do not hash to the SHA-256 it
// claims.
var ErrCorrupt = errors.New("blobcache: content does not match its hash")

// Source is the content a blob is filled from: its bytes, size and hash
// (store.Content has these methods).
type Source interface {
	io.ReaderAt
	Size() int64
	SHA256() string
}

// Cache is a bounded directory of blob files. Its methods are safe for
// concurrent use; Close stops its sealer.
type Cache struct {
	dir string
	max int64
	log *slog.Logger

	mu      sync.Mutex
	used    int64
	lru     *list.List               // of *blob, most recently used first
	blobs   map[string]*list.Element // by SHA-256
	filling map[string]*fill         // fills in progress, by SHA-256
	stats   Stats

	seals      chan *blob    // filled blobs waiting to be sealed
	stopSealer chan struct{} // closed by Close
	sealerDone chan struct{} // closed when the sealer has exited
	closeOnce  sync.Once
}

type blob struct {
	sum  string
	size int64
	// kept: found sealed at Open and not yet known to be held by the
	// store (Get, Fill or Retain clears it).
	kept bool
}

// fill is one blob being written; done is closed when err is set.
type fill struct {
	done chan struct{}
	err  error
}

// Stats are a cache's counts. Kept and Dropped are what Open found; the
// other counters start at zero at Open.
type Stats struct {
	Blobs int   // blobs cached now
	Bytes int64 // bytes they take
	// Kept is the blobs an earlier run left that Open kept: sealed, and
	// their files unchanged since.
	Kept int
	// Dropped is the blobs and unfinished fills of an earlier run that
	// Open deleted: never sealed, or changed since sealed.
	Dropped int
	Hits    uint64 // Get (or Fill) found the blob cached
	Fills   uint64 // blobs copied in from a Source
	Pruned  uint64 // kept blobs Retain deleted: the store no longer held them
}

// sealQueue bounds the blobs waiting to be sealed; a blob that does not
// fit stays unsealed (usable now, dropped by the next Open).
const sealQueue = 64

// Open makes dir (0700) the cache's directory and bounds the cache to
// maxBytes (which must be positive). It keeps the blobs an earlier run
// sealed whose files have not changed since (see the package doc), least
// recently filled deleted first beyond maxBytes, and deletes every other
// blob, seal and unfinished fill in dir; other files are left alone. Close
// the cache when done.
func Open(dir string, maxBytes int64, log *slog.Logger) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("blobcache: size %d: must be positive", maxBytes)
	}
	if log == nil {
		log = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("blobcache: %w", err)
	}
	c := &Cache{dir: dir, max: maxBytes, log: log, lru: list.New(),
		blobs: make(map[string]*list.Element), filling: make(map[string]*fill),
		seals: make(chan *blob, sealQueue), stopSealer: make(chan struct{}), sealerDone: make(chan struct{})}
	if err := c.reindex(); err != nil {
		return nil, err
	}
	go c.runSealer()
	return c, nil
}

// Close stops sealing: the blobs still queued are sealed first, so that
// the next Open keeps them. The cache stays usable; blobs filled after
// Close are not sealed. Close is idempotent.
func (c *Cache) Close() error {
	c.closeOnce.Do(func() { close(c.stopSealer) })
	<-c.sealerDone
	return nil
}

// isBlobName reports whether name is a lowercase hex SHA-256.
func isBlobName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(name)
	return err == nil && strings.ToLower(name) == name
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Max returns the cache's bound in bytes.
func (c *Cache) Max() int64 { return c.max }

// Used returns the bytes the cached blobs take.
func (c *Cache) Used() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *Cache) path(sum string) string { return filepath.Join(c.dir, sum) }

// Has reports whether the blob sum is cached.
func (c *Cache) Has(sum string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.blobs[sum]
	return ok
}

// Stats returns the cache's counts.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Blobs, s.Bytes = len(c.blobs), c.used
	return s
}

// Get opens the cached blob sum for reading and marks it recently used; ok
// is false when it is not cached. sum must be the hash of content the
// store holds now: a blob kept from an earlier run is then known to be
// still wanted (see Retain).
func (c *Cache) Get(sum string) (f *os.File, ok bool) { return c.open(sum, true) }

// open is Get; hit says whether finding the blob counts as a hit.
func (c *Cache) open(sum string, hit bool) (f *os.File, ok bool) {
	c.mu.Lock()
	el, ok := c.blobs[sum]
	if ok {
		c.lru.MoveToFront(el)
		el.Value.(*blob).kept = false
		if hit {
			c.stats.Hits++
		}
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	f, err := os.Open(c.path(sum))
	if err != nil {
		// Deleted between the lookup and the open: not cached any more.
		return nil, false
	}
	return f, true
}

// Fill caches src's content, unless it is cached already, and opens it.
// Concurrent fills of the same blob write it once; the others wait (or
// return early when ctx is done).
func (c *Cache) Fill(ctx context.Context, src Source) (*os.File, error) {
	sum := src.SHA256()
	if !isBlobName(sum) {
		return nil, fmt.Errorf("blobcache: fill: bad hash %q", sum)
	}
	if src.Size() > c.max {
		return nil, fmt.Errorf("blobcache: fill %s (%d bytes, cache %d): %w", sum, src.Size(), c.max, ErrTooLarge)
	}
	for wrote := false; ; wrote = true {
		if f, ok := c.open(sum, !wrote); ok {
			return f, nil
		}
		c.mu.Lock()
		fl, busy := c.filling[sum]
		if !busy {
			fl = &fill{done: make(chan struct{})}
			c.filling[sum] = fl
		}
		c.mu.Unlock()
		if busy {
			select {
			case <-fl.done:
				if fl.err != nil {
					return nil, fl.err
				}
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("blobcache: waiting for %s: %w", sum, ctx.Err())
			}
		}
		err := c.write(ctx, src)
		c.mu.Lock()
		delete(c.filling, sum)
		c.mu.Unlock()
		fl.err = err
		close(fl.done)
		if err != nil {
			return nil, err
		}
	}
}

// write copies src into a temporary file, checks its hash, renames it to
// the blob's name and accounts for it, evicting older blobs to make room.
func (c *Cache) write(ctx context.Context, src Source) (err error) {
	sum, size := src.SHA256(), src.Size()
	tmp, err := os.CreateTemp(c.dir, ".fill-*")
	if err != nil {
		return fmt.Errorf("blobcache: fill %s: %w", sum, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	buf := make([]byte, 1<<20)
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("blobcache: fill %s: %w", sum, err)
		}
		n, rerr := src.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n > 0 {
			h.Write(buf[:n])
			if _, err := tmp.Write(buf[:n]); err != nil {
				return fmt.Errorf("blobcache: fill %s: %w", sum, err)
			}
			off += int64(n)
		}
		if rerr != nil && !(errors.Is(rerr, io.EOF) && off == size) {
			return fmt.Errorf("blobcache: fill %s: read at %d: %w", sum, off, rerr)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum {
		return fmt.Errorf("blobcache: fill %s: got %s: %w", sum, got, ErrCorrupt)
	}
	if err := tmp.Chmod(0o400); err != nil {
		return fmt.Errorf("blobcache: fill %s: %w", sum, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("blobcache: fill %s: %w", sum, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.makeRoomLocked(size)
	if err := os.Rename(tmp.Name(), c.path(sum)); err != nil {
		return fmt.Errorf("blobcache: fill %s: %w", sum, err)
	}
	b := &blob{sum: sum, size: size}
	c.blobs[sum] = c.lru.PushFront(b)
	c.used += size
	c.stats.Fills++
	select {
	case c.seals <- b:
	default:
		c.log.Debug("blobcache: seal queue full; the blob is not kept across restarts", "sha256", sum)
	}
	return nil
}

// makeRoomLocked deletes least recently used blobs until size more bytes
// fit. c.mu must be held.
func (c *Cache) makeRoomLocked(size int64) {
	for c.used+size > c.max {
		el := c.lru.Back()
		if el == nil {
			return
		}
		c.removeLocked(el)
	}
}

// Retain deletes the blobs kept from an earlier run that are not yet known
// to be wanted (by Get or Fill) and that held says the store no longer
// has; the others are known to be wanted from now on. It returns how many
// it deleted. held is called with c's lock held and must not call c.
func (c *Cache) Retain(held func(sum string) bool) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if b := el.Value.(*blob); b.kept {
			if held(b.sum) {
				b.kept = false
			} else {
				c.removeLocked(el)
				n++
			}
		}
		el = next
	}
	c.stats.Pruned += uint64(n)
	return n
}

// Remove deletes the blob sum if it is cached: the store may no longer
// have it. Readers that have it open keep reading it.
func (c *Cache) Remove(sum string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.blobs[sum]; ok {
		c.removeLocked(el)
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	b := c.lru.Remove(el).(*blob)
	delete(c.blobs, b.sum)
	c.used -= b.size
	// The seal goes first: a blob left without one is dropped at Open.
	if err := os.Remove(c.path(b.sum) + sealSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("blobcache: deleting a seal failed", "sha256", b.sum, "err", err)
	}
	if err := os.Remove(c.path(b.sum)); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("blobcache: deleting a blob failed", "sha256", b.sum, "err", err)
	}
}
