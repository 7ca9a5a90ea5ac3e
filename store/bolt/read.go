package bolt

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"sync/atomic"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/chunkread"
	bbolt "go.etcd.io/bbolt"
)

// Stat returns the entry at path. It is safe for concurrent use.
func (s *Store) Stat(ctx context.Context, path string) (store.Entry, error) {
	if err := check.Path("stat", path); err != nil {
		return store.Entry{}, err
	}
	if err := s.check(ctx); err != nil {
		return store.Entry{}, pathErr("stat", path, err)
	}
	var e store.Entry
	err := s.db.View(func(tx *bbolt.Tx) error {
		if path == depotpath.Root {
			var err error
			e, err = statRoot(tx.Bucket(bucketMeta))
			return err
		}
		r, err := getEntry(tx.Bucket(bucketTree), path)
		if err != nil {
			return err
		}
		if r == nil {
			return store.ErrNotExist
		}
		e = r.entry(path)
		return nil
	})
	return e, pathErr("stat", path, err)
}

// ReadDir returns the children of dir sorted by name (byte order). It is
// safe for concurrent use; the listing is one consistent snapshot.
func (s *Store) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := check.Path("readdir", dir); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	var out []store.Entry
	err := s.db.View(func(tx *bbolt.Tx) error {
		tree := tx.Bucket(bucketTree)
		if dir != depotpath.Root {
			r, err := getEntry(tree, dir)
			if err != nil {
				return err
			}
			if r == nil {
				return store.ErrNotExist
			}
			if r.Kind != store.KindDir {
				return store.ErrNotDir
			}
		}
		prefix := dirPrefix(dir)
		c := tree.Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(out)%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var r record
			if err := r.decode(v); err != nil {
				return err
			}
			out = append(out, r.entry(keyPath(k)))
		}
		return nil
	})
	if err != nil {
		return nil, pathErr("readdir", dir, err)
	}
	return out, nil
}

// Open returns the content of the file at path as it is now. The Content
// keeps reading those bytes until it is closed, even if the file is updated
// or removed meanwhile. It is safe for concurrent use.
//
// Opening a present file counts as a hit and a use of its content (for
// the LRU order); opening a placeholder counts as a miss. Both are counted
// in memory and persisted later (see Options.FlushInterval), so Open never
// writes.
func (s *Store) Open(ctx context.Context, path string) (store.Content, error) {
	if err := check.Path("open", path); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, pathErr("open", path, err)
	}
	if path == depotpath.Root {
		return nil, pathErr("open", path, store.ErrIsDir)
	}
	c := &content{s: s}
	missed := false
	// gc.mu is held across the read and the pin so that no write can
	// delete the blob between them (see Store.update).
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		r, err := getEntry(tx.Bucket(bucketTree), path)
		if err != nil {
			return err
		}
		switch {
		case r == nil:
			return store.ErrNotExist
		case r.Kind == store.KindDir:
			return store.ErrIsDir
		case !r.Present:
			missed = true
			return store.ErrNotPresent
		}
		h, err := parseHash(r.SHA256)
		if err != nil {
			return err
		}
		b, ok, err := getBlob(tx.Bucket(bucketBlobs), h)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("corrupt store: content %s is missing", r.SHA256)
		}
		c.h, c.sum, c.size, c.chunkSize = h, r.SHA256, b.Size, b.ChunkSize
		return nil
	})
	if err != nil {
		if missed {
			s.uses.miss()
		}
		return nil, pathErr("open", path, err)
	}
	s.pinLocked(c.h)
	s.uses.hit(c.h)
	return c, nil
}

// content is a pinned blob: its chunks stay until Close.
type content struct {
	s         *Store
	h         hash
	sum       string
	size      int64
	chunkSize int64
	closed    atomic.Bool
}

var _ store.Content = (*content)(nil)

func (c *content) Size() int64    { return c.size }
func (c *content) SHA256() string { return c.sum }

// ReadAt reads the chunks covering [off, off+len(p)) in one short read
// transaction.
func (c *content) ReadAt(p []byte, off int64) (int, error) {
	if c.closed.Load() {
		return 0, fs.ErrClosed
	}
	return chunkread.ReadAt(c, c.sum, c.size, c.chunkSize, p, off)
}

// Chunks reads the content's chunks in one read transaction (see
// chunkread.Source).
func (c *content) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if c.s.closed.Load() {
		return store.ErrClosed
	}
	return dbErr(c.s.db.View(func(tx *bbolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		return read(func(i int64) ([]byte, error) { return chunks.Get(chunkKey(c.h, i)), nil })
	}))
}

// Close releases the content; the last Close of a blob that is no longer
// referenced deletes it. Close is idempotent.
func (c *content) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.s.unpin(c.h)
	return nil
}
