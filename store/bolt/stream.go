package bolt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

var _ store.Streamer = (*Store)(nil)

// PutStream stores the bytes of r at req.Path (see store.Streamer). The
// bytes go straight into blob chunks, in transactions of about 16 MiB, as
// they arrive; a last transaction makes them the file, as Put does. So
// memory stays bounded whatever the size, and with req.SHA256 declared
// every byte is written once: the chunks are written under the declared
// hash, which the last transaction checks first. Without it they are
// written under a random key and copied under their hash at the end.
// Content the store already has is only hashed, never written again.
//
// Until the last transaction the chunks carry an orphan mark, so a crash
// leaves nothing behind (the next Open sweeps them), and a failure deletes
// them at once. It is safe for concurrent use; concurrent streams that
// declare the same hash take turns.
func (s *Store) PutStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64) (store.PutResult, error) {
	if err := checkPath("put", req.Path); err != nil {
		return store.PutResult{}, err
	}
	if req.Path == depotpath.Root {
		return store.PutResult{}, pathErr("put", req.Path, fmt.Errorf("%w: the root is a directory", store.ErrConflict))
	}
	if size >= 0 {
		if err := s.checkSize(size); err != nil {
			return store.PutResult{}, pathErr("put", req.Path, err)
		}
	}
	var key hash
	if req.SHA256 != "" {
		h, err := parseHash(req.SHA256)
		if err != nil {
			return store.PutResult{}, pathErr("put", req.Path, fmt.Errorf("%w: %w", store.ErrUpload, err))
		}
		key = h
		if err := s.uploads.lock(ctx, "\x00stream:"+req.SHA256); err != nil {
			return store.PutResult{}, pathErr("put", req.Path, err)
		}
		defer s.uploads.unlock("\x00stream:" + req.SHA256)
	} else {
		rand.Read(key[:])
	}
	res, err := s.putStream(ctx, req, r, size, key)
	if err != nil {
		return store.PutResult{}, pathErr("put", req.Path, err)
	}
	return res, nil
}

// putStream is PutStream with the key the chunks are staged under: the
// declared hash, or a random one.
func (s *Store) putStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64, key hash) (store.PutResult, error) {
	declared := req.SHA256 != ""
	exists, err := s.pinBlob(key)
	if err != nil {
		return store.PutResult{}, err
	}
	defer s.unpin(key) // sweeps what is left staged under key
	d := sha256.New()
	var n int64
	var next int64 // chunk index to write next
	buf := make([]byte, s.opts.ChunkSize)
	write := !exists
	for done := false; !done; {
		// One transaction's worth of chunks.
		var chunks [][]byte
		for batch := 0; batch < batchBytes && !done; {
			m, err := fill(r, buf)
			switch {
			case errors.Is(err, io.EOF):
				done = true
			case err != nil:
				return store.PutResult{}, fmt.Errorf("reading the content: %w", err)
			}
			if m == 0 {
				break
			}
			d.Write(buf[:m])
			n += int64(m)
			if err := s.checkSize(n); err != nil {
				return store.PutResult{}, err
			}
			if size >= 0 && n > size {
				return store.PutResult{}, fmt.Errorf("%w: more than the %d bytes announced", store.ErrUpload, size)
			}
			if write {
				chunks = append(chunks, append([]byte(nil), buf[:m]...))
			}
			batch += m
		}
		if len(chunks) == 0 {
			continue
		}
		appeared, err := s.stageChunks(ctx, key, next, chunks)
		if err != nil {
			return store.PutResult{}, err
		}
		next += int64(len(chunks))
		write = !appeared
	}
	if size >= 0 && n != size {
		return store.PutResult{}, fmt.Errorf("%w: %d bytes arrived, %d were announced", store.ErrUpload, n, size)
	}
	sum := hex.EncodeToString(d.Sum(nil))
	if declared && sum != req.SHA256 {
		return store.PutResult{}, fmt.Errorf("%w: declared %s, content has %s", store.ErrHashMismatch, req.SHA256, sum)
	}
	if !declared {
		return s.commitStaged(ctx, req, sum, n, key, next)
	}
	var res store.PutResult
	err = s.update(ctx, func(w *wtx) error {
		var err error
		res, err = w.putFile(req, sum, n, func(hash) error {
			if !write {
				return fmt.Errorf("content %s vanished while pinned", sum)
			}
			return nil // staged above
		})
		return err
	})
	return res, err
}

// stageChunks writes chunks as the chunks first, first+1, ... of blob key,
// with the orphan mark that has the next Open delete them if no file comes
// to use them. When the blob has appeared meanwhile (a Put of the same
// content), it writes nothing and reports it: the chunks of a blob with a
// record are never overwritten.
func (s *Store) stageChunks(ctx context.Context, key hash, first int64, chunks [][]byte) (bool, error) {
	appeared := false
	err := s.update(ctx, func(w *wtx) error {
		_, ok, err := getBlob(w.blobs, key)
		if appeared = ok; ok || err != nil {
			return err
		}
		if err := w.orphan.Put(key[:], []byte{1}); err != nil {
			return err
		}
		for i, c := range chunks {
			if err := w.chunks.Put(chunkKey(key, first+int64(i)), c); err != nil {
				return err
			}
		}
		return nil
	})
	return appeared, err
}

// commitStaged makes the count chunks staged under the random key the
// content sum (of size bytes) of req.Path: copied under sum in bounded
// transactions unless the store has that content, then written as Put
// writes a file.
func (s *Store) commitStaged(ctx context.Context, req store.PutRequest, sum string, size int64, key hash, count int64) (store.PutResult, error) {
	h, err := parseHash(sum)
	if err != nil {
		return store.PutResult{}, err
	}
	if err := s.uploads.lock(ctx, "\x00stream:"+sum); err != nil {
		return store.PutResult{}, err
	}
	defer s.uploads.unlock("\x00stream:" + sum)
	exists, err := s.pinBlob(h)
	if err != nil {
		return store.PutResult{}, err
	}
	defer s.unpin(h)
	per := int64(max(1, batchBytes/s.opts.ChunkSize))
	for i := int64(0); i < count && !exists; i += per {
		var chunks [][]byte
		err := s.db.View(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketChunks)
			for j := i; j < min(i+per, count); j++ {
				v, ok := lookup(b, chunkKey(key, j))
				if !ok {
					return fmt.Errorf("staged chunk %d is missing", j)
				}
				chunks = append(chunks, append([]byte(nil), v...))
			}
			return nil
		})
		if err != nil {
			return store.PutResult{}, dbErr(err)
		}
		if exists, err = s.stageChunks(ctx, h, i, chunks); err != nil {
			return store.PutResult{}, err
		}
	}
	var res store.PutResult
	err = s.update(ctx, func(w *wtx) error {
		var err error
		res, err = w.putFile(req, sum, size, func(hash) error { return nil }) // staged above
		return err
	})
	return res, err
}

// pinBlob pins h, as an open Content does, and reports whether the store
// has it.
func (s *Store) pinBlob(h hash) (bool, error) {
	exists := false
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		_, ok, err := getBlob(tx.Bucket(bucketBlobs), h)
		exists = ok
		return err
	})
	if err != nil {
		return false, dbErr(err)
	}
	s.pinLocked(h)
	return exists, nil
}

// fill reads from r until buf is full or r ends. Unlike io.ReadFull it
// returns io.EOF for any end, and r's own errors, io.ErrUnexpectedEOF (a
// request body cut short) included, as they are.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
