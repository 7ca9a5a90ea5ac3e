package bolt

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// Stats counts what the file holds, for tests of deduplication and garbage
// collection.
type Stats struct {
	Blobs, Chunks, Orphans, Uploads int
}

// ReadStats returns the counts of s's buckets.
func ReadStats(s *Store) (Stats, error) {
	var st Stats
	err := s.db.View(func(tx *bbolt.Tx) error {
		st.Blobs = tx.Bucket(bucketBlobs).Stats().KeyN
		st.Chunks = tx.Bucket(bucketChunks).Stats().KeyN
		st.Orphans = tx.Bucket(bucketOrphans).Stats().KeyN
		return tx.Bucket(bucketUploads).ForEachBucket(func([]byte) error { st.Uploads++; return nil })
	})
	return st, err
}

// Verify checks the file's invariants: every present file has its blob,
// every blob's reference count matches the entries using it and its chunks
// are all there and no more, no chunk is without a blob, and, when no
// Content is open, no orphan is left.
func Verify(s *Store) error {
	return s.db.View(func(tx *bbolt.Tx) error {
		refs := map[hash]uint64{}
		err := tx.Bucket(bucketTree).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(v)
			if err != nil {
				return err
			}
			if r.Kind != store.KindFile || !r.Present {
				if r.SHA256 != "" {
					return fmt.Errorf("%s: not present but has sha256", keyPath(k))
				}
				return nil
			}
			h, err := parseHash(r.SHA256)
			if err != nil {
				return fmt.Errorf("%s: %w", keyPath(k), err)
			}
			refs[h]++
			return nil
		})
		if err != nil {
			return err
		}
		blobs := map[hash]blobRecord{}
		err = tx.Bucket(bucketBlobs).ForEach(func(k, _ []byte) error {
			var h hash
			copy(h[:], k)
			b, _, err := getBlob(tx.Bucket(bucketBlobs), h)
			blobs[h] = b
			return err
		})
		if err != nil {
			return err
		}
		for h, n := range refs {
			if blobs[h].Refs != n {
				return fmt.Errorf("blob %x: %d references recorded, %d entries use it", h, blobs[h].Refs, n)
			}
		}
		s.gc.mu.Lock()
		open := len(s.gc.open)
		s.gc.mu.Unlock()
		for h, b := range blobs {
			if refs[h] == 0 && open == 0 {
				return fmt.Errorf("blob %x is unreferenced", h)
			}
			c := tx.Bucket(bucketChunks).Cursor()
			var size, i int64
			for k, v := c.Seek(h[:]); k != nil && bytes.HasPrefix(k, h[:]); k, v = c.Next() {
				if !bytes.Equal(k, chunkKey(h, i)) {
					return fmt.Errorf("blob %x: chunk %d missing", h, i)
				}
				if int64(len(v)) != min(b.ChunkSize, b.Size-size) {
					return fmt.Errorf("blob %x: chunk %d has %d bytes", h, i, len(v))
				}
				size += int64(len(v))
				i++
			}
			if size != b.Size {
				return fmt.Errorf("blob %x: chunks hold %d bytes of %d", h, size, b.Size)
			}
		}
		err = tx.Bucket(bucketChunks).ForEach(func(k, _ []byte) error {
			var h hash
			copy(h[:], k)
			if _, ok := blobs[h]; !ok {
				return fmt.Errorf("chunk of %s without a blob", hex.EncodeToString(k[:32]))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n := tx.Bucket(bucketOrphans).Stats().KeyN; n > 0 && open == 0 {
			return fmt.Errorf("%d orphans left with no Content open", n)
		}
		return nil
	})
}
