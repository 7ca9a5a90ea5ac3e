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
// concurrent use.
type Cache struct {
	dir string
	max int64
	log *slog.Logger

	mu      sync.Mutex
	used    int64
	lru     *list.List               // of *blob, most recently used first
	blobs   map[string]*list.Element // by SHA-256
	filling map[string]*fill         // fills in progress, by SHA-256
}

type blob struct {
	sum  string
	size int64
}

// fill is one blob being written; done is closed when err is set.
type fill struct {
	done chan struct{}
	err  error
}

// Open makes dir (0700) the cache's directory, deleting the blobs an
// earlier run left in it, and bounds the cache to maxBytes (which must be
// positive).
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
	if err := clear(dir); err != nil {
		return nil, err
	}
	return &Cache{dir: dir, max: maxBytes, log: log, lru: list.New(),
		blobs: make(map[string]*list.Element), filling: make(map[string]*fill)}, nil
}

// clear deletes the blobs and unfinished fills in dir, and nothing else: a
// cache directory shared by mistake keeps its other files.
func clear(dir string) error {
	des, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("blobcache: %w", err)
	}
	for _, de := range des {
		name := de.Name()
		if !isBlobName(name) && !strings.HasPrefix(name, ".fill-") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("blobcache: clear %s: %w", dir, err)
		}
	}
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

// Get opens the cached blob sum for reading and marks it recently used; ok
// is false when it is not cached.
func (c *Cache) Get(sum string) (f *os.File, ok bool) {
	c.mu.Lock()
	el, ok := c.blobs[sum]
	if ok {
		c.lru.MoveToFront(el)
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
	for {
		if f, ok := c.Get(sum); ok {
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
	c.blobs[sum] = c.lru.PushFront(&blob{sum: sum, size: size})
	c.used += size
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
	if err := os.Remove(c.path(b.sum)); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.log.Warn("blobcache: deleting a blob failed", "sha256", b.sum, "err", err)
	}
}
