package bolt

import (
	"bytes"
	"context"
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/chunkread"
	bbolt "go.etcd.io/bbolt"
)

// Stat returns the entry at path. It is safe for concurrent use.
func (s *Store) Stat(ctx context.Context, path string) (store.Entry, error) {
	return s.stat(ctx, path, func(tx *bbolt.Tx) (*record, error) { return getEntry(tx.Bucket(bucketTree), path) })
}

// stat is Stat of the record get reads.
func (s *Store) stat(ctx context.Context, path string, get func(tx *bbolt.Tx) (*record, error)) (store.Entry, error) {
	var e store.Entry
	err := s.view(ctx, "stat", path, func(tx *bbolt.Tx) error {
		var err error
		e, err = entryOf(tx, path, get)
		return err
	})
	return e, err
}

// entryOf is the entry of the record get reads for p, the root's own.
func entryOf(tx *bbolt.Tx, p string, get func(tx *bbolt.Tx) (*record, error)) (store.Entry, error) {
	if p == depotpath.Root {
		return statRoot(tx.Bucket(bucketMeta))
	}
	r, err := get(tx)
	if err != nil {
		return store.Entry{}, err
	}
	if r == nil {
		return store.Entry{}, store.ErrNotExist
	}
	return r.Entry(p), nil
}

// view runs fn in a read transaction for the operation op on path.
func (s *Store) view(ctx context.Context, op, path string, fn func(tx *bbolt.Tx) error) error {
	if err := check.Path(op, path); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return pathErr(op, path, err)
	}
	return pathErr(op, path, s.db.View(fn))
}

// ReadDir returns the children of dir sorted by name (byte order). It is
// safe for concurrent use; the listing is one consistent snapshot.
func (s *Store) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	var out []store.Entry
	err := s.view(ctx, "readdir", dir, func(tx *bbolt.Tx) error {
		tree := tx.Bucket(bucketTree)
		e, err := entryOf(tx, dir, func(tx *bbolt.Tx) (*record, error) { return getEntry(tree, dir) })
		if err != nil {
			return err
		}
		if !e.IsDir() {
			return store.ErrNotDir
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
			if err := decodeInto(&r, v); err != nil {
				return err
			}
			out = append(out, r.Entry(keyPath(k)))
		}
		return nil
	})
	if err != nil {
		return nil, err
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
	return s.open(ctx, "open", path, func(tx *bbolt.Tx) (*record, error) { return getEntry(tx.Bucket(bucketTree), path) })
}

// open is Open of the record get reads.
func (s *Store) open(ctx context.Context, op, path string, get func(tx *bbolt.Tx) (*record, error)) (store.Content, error) {
	if err := check.Path(op, path); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, pathErr(op, path, err)
	}
	if path == depotpath.Root {
		return nil, pathErr(op, path, store.ErrIsDir)
	}
	var (
		src             = blobChunks{s: s}
		sum             string
		size, chunkSize int64
	)
	missed := false
	// gc.mu is held across the read and the pin so that no write can
	// delete the blob between them (see Store.update).
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		r, err := get(tx)
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
		src.h, sum, size, chunkSize = h, r.SHA256, b.Size, b.ChunkSize
		return nil
	})
	if err != nil {
		if missed {
			s.uses.miss()
		}
		return nil, pathErr(op, path, err)
	}
	s.pinLocked(src.h)
	s.uses.hit(src.h)
	return chunkread.New(src, sum, size, chunkSize, func() { s.unpin(src.h) }), nil
}

// blobChunks are the chunks of blob h; an open Content pins the blob, so
// they stay until it is closed.
type blobChunks struct {
	s *Store
	h hash
}

// Chunks reads the blob's chunks in one read transaction (see
// chunkread.Source).
func (b blobChunks) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if b.s.closed.Load() {
		return store.ErrClosed
	}
	return dbErr(b.s.db.View(func(tx *bbolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		return read(func(i int64) ([]byte, error) { return chunks.Get(chunkKey(b.h, i)), nil })
	}))
}
