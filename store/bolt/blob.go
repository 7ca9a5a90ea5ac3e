package bolt

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/depotfs/depotfs/store/internal/check"
	bbolt "go.etcd.io/bbolt"
)

// gc tracks which blobs are pinned in memory: read by an open Content or
// being staged by an upload. A pinned blob that loses its last reference
// keeps its chunks, and its hash is recorded in the orphans bucket, until
// the last pin is released (or the next Open).
type gc struct {
	mu   sync.Mutex
	open map[hash]int
}

// dropLocked handles a blob whose reference count reached 0 in tx: deleted
// at once unless pinned. The caller holds g.mu until tx has committed.
func (g *gc) dropLocked(tx *bbolt.Tx, h hash) error {
	b, ok, err := getBlob(tx.Bucket(bucketBlobs), h)
	if err != nil || !ok || b.Refs > 0 {
		return err
	}
	if g.open[h] > 0 {
		return tx.Bucket(bucketOrphans).Put(h[:], []byte{1})
	}
	return deleteBlob(tx, h)
}

// deleteBlob deletes a blob's record, its chunks and its orphan mark.
func deleteBlob(tx *bbolt.Tx, h hash) error {
	if err := tx.Bucket(bucketBlobs).Delete(h[:]); err != nil {
		return err
	}
	c := tx.Bucket(bucketChunks).Cursor()
	for k, _ := c.Seek(h[:]); k != nil && bytes.HasPrefix(k, h[:]); k, _ = c.Seek(h[:]) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketOrphans).Delete(h[:])
}

// sweepBlob resolves an orphan mark: the blob is deleted unless it has been
// referenced again. The caller makes sure h is not pinned.
func sweepBlob(tx *bbolt.Tx, h hash) error {
	b, ok, err := getBlob(tx.Bucket(bucketBlobs), h)
	if err != nil {
		return err
	}
	if ok && b.Refs > 0 {
		return tx.Bucket(bucketOrphans).Delete(h[:])
	}
	return deleteBlob(tx, h)
}

// pinLocked records one more reader of h; the caller holds s.gc.mu.
func (s *Store) pinLocked(h hash) { s.gc.open[h]++ }

// unpin releases a pin of h; the last one sweeps h if it is an orphan.
func (s *Store) unpin(h hash) {
	s.gc.mu.Lock()
	s.gc.open[h]--
	last := s.gc.open[h] <= 0
	if last {
		delete(s.gc.open, h)
	}
	s.gc.mu.Unlock()
	if last {
		if err := s.sweep(h); err != nil {
			s.log.Error("bolt: sweeping unreferenced content", "content", hex.EncodeToString(h[:]), "err", err)
		}
	}
}

// sweep deletes h if it is an unpinned orphan.
func (s *Store) sweep(h hash) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed.Load() {
		return nil // the next Open sweeps it
	}
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	if s.gc.open[h] > 0 {
		return nil
	}
	orphan := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		orphan = tx.Bucket(bucketOrphans).Get(h[:]) != nil
		return nil
	})
	if err != nil || !orphan {
		return dbErr(err)
	}
	return dbErr(s.db.Update(func(tx *bbolt.Tx) error { return sweepBlob(tx, h) }))
}

// parseHash decodes a lowercase hex SHA-256.
func parseHash(s string) (hash, error) {
	var h hash
	if err := check.Hash(s); err != nil {
		return h, err
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err
}

// ref adds a reference to the blob with the given hash, creating it with
// write when it does not exist. write stores the chunks (it may be nil when
// they are already staged).
func (w *wtx) ref(sum string, size int64, write func(h hash) error) error {
	h, err := w.s.sealer.blobKey(sum)
	if err != nil {
		return err
	}
	old, ok, err := getBlob(w.blobs, h)
	if err != nil {
		return err
	}
	b := old
	if ok {
		if b.Size != size {
			return fmt.Errorf("corrupt blob %s: size %d, content has %d", sum, b.Size, size)
		}
		b.Refs++
	} else {
		if write != nil {
			if err := write(h); err != nil {
				return err
			}
		}
		b = blobRecord{Size: size, Refs: 1, ChunkSize: w.chunkSize}
	}
	if err := w.setBlob(h, old, ok, b); err != nil {
		return err
	}
	if b.Refs == 1 {
		return w.orphan.Delete(h[:])
	}
	return nil
}

// Unref drops a reference to a blob; at 0 it is dropped after the
// transaction function returns (see gc.dropLocked).
func (w *wtx) Unref(sum string) error {
	h, err := w.s.sealer.blobKey(sum)
	if err != nil {
		return err
	}
	old, ok, err := getBlob(w.blobs, h)
	if err != nil {
		return err
	}
	if !ok || old.Refs == 0 {
		return fmt.Errorf("corrupt store: blob %s has no reference to drop", sum)
	}
	b := old
	b.Refs--
	if err := w.setBlob(h, old, true, b); err != nil {
		return err
	}
	if b.Refs == 0 {
		w.dropped = append(w.dropped, h)
	}
	return nil
}

// writeData stores data as the chunks of blob h.
func (w *wtx) writeData(h hash, data []byte) error {
	for i, off := int64(0), int64(0); off < int64(len(data)); i, off = i+1, off+w.chunkSize {
		end := min(off+w.chunkSize, int64(len(data)))
		if err := w.putBlobChunk(h, i, data[off:end]); err != nil {
			return err
		}
	}
	return nil
}
