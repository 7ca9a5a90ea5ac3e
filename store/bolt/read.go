package bolt

import (
	"context"
	"fmt"
	"math"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/chunkread"
	bbolt "go.etcd.io/bbolt"
)

// Stat returns the entry at path. It is safe for concurrent use.
func (s *Store) Stat(ctx context.Context, path string) (store.Entry, error) {
	return s.StatAt(ctx, path, math.MaxUint64)
}

// entryAt is the entry at p as of revision rev (see recordAt), the root's
// own for the root.
func entryAt(tx *bbolt.Tx, p string, rev uint64, c sealer) (store.Entry, error) {
	if p == depotpath.Root {
		e, err := statRoot(tx.Bucket(bucketMeta))
		if err == nil {
			err = dirTimeAt(tx, &e, rev, math.MaxUint64)
		}
		return e, err
	}
	r, until, err := recordAt(tx, p, rev, c)
	if err != nil {
		return store.Entry{}, err
	}
	if r == nil {
		return store.Entry{}, store.ErrNotExist
	}
	e := r.Entry(p)
	return e, dirTimeAt(tx, &e, rev, until)
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
	return s.ReadDirAt(ctx, dir, math.MaxUint64)
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
	return s.OpenAt(ctx, path, math.MaxUint64)
}

// OpenAt is Open of the file as it was at revision rev. It is safe for
// concurrent use.
func (s *Store) OpenAt(ctx context.Context, path string, rev uint64) (store.Content, error) {
	if err := check.Path("open", path); err != nil {
		return nil, err
	}
	if err := s.check(ctx); err != nil {
		return nil, pathErr("open", path, err)
	}
	if path == depotpath.Root {
		return nil, pathErr("open", path, store.ErrIsDir)
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
		r, _, err := recordAt(tx, path, rev, s.sealer)
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
		h, err := s.sealer.blobKey(r.SHA256)
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
		src.h, src.chunkSize, sum, size, chunkSize = h, b.ChunkSize, r.SHA256, b.Size, b.ChunkSize
		return nil
	})
	if err != nil {
		if missed {
			s.uses.miss()
		}
		return nil, pathErr("open", path, err)
	}
	s.pinLocked(src.h)
	s.uses.hit(src.h)
	return chunkread.New(src, sum, size, chunkSize, func() { s.unpin(src.h) }), nil
}

// blobChunks are the chunks of blob h; an open Content pins the blob, so
// they stay until it is closed.
type blobChunks struct {
	s         *Store
	h         hash
	chunkSize int64
}

// Chunks reads the blob's chunks in one read transaction (see
// chunkread.Source).
func (b blobChunks) Chunks(read func(get func(i int64) ([]byte, error)) error) error {
	if b.s.closed.Load() {
		return store.ErrClosed
	}
	return dbErr(b.s.db.View(func(tx *bbolt.Tx) error {
		chunks := tx.Bucket(bucketChunks)
		return read(func(i int64) ([]byte, error) { return b.s.sealer.blobChunk(chunks, b.h, b.chunkSize, i) })
	}))
}
