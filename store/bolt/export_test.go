package bolt

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
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
// are all there and no more, no chunk is without a blob, when no Content
// is open no orphan is left, the counters, the lru, refs and expiry
// indexes and the pin counts agree with the tree and the blobs, and the
// in-memory count of uploads in progress agrees with the file.
func Verify(s *Store) error {
	skip := skipOf(s)
	return s.db.View(func(tx *bbolt.Tx) error {
		refs := map[hash]uint64{}
		err := tx.Bucket(bucketTree).ForEach(func(k, v []byte) error {
			r, err := decodeRecord(v, s.sealer)
			if err != nil {
				return err
			}
			if r.Kind != store.KindFile || !r.Present {
				if r.SHA256 != "" {
					return fmt.Errorf("%s: not present but has sha256", keyPath(k))
				}
				return nil
			}
			h, err := s.sealer.blobKey(r.SHA256)
			if err != nil {
				return fmt.Errorf("%s: %w", keyPath(k), err)
			}
			refs[h]++
			return nil
		})
		if err != nil {
			return err
		}
		err = tx.Bucket(bucketVersions).ForEach(func(k, v []byte) error {
			ver, err := decodeVersion(k, v, s.sealer)
			if sum := entryrec.PresentSum(ver.Rec); err == nil && sum != "" {
				h, _ := s.sealer.blobKey(sum)
				refs[h]++
			}
			return err
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
				v, err := s.sealer.open(adBlob, k, v)
				if err != nil {
					return fmt.Errorf("blob %x: chunk %d: %w", h, i, err)
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
		var staged stagedTotals
		if err := staged.load(tx.Bucket(bucketUploads), s.sealer); err != nil {
			return err
		}
		if u, b := s.staged.uploads.Load(), s.staged.bytes.Load(); u != staged.uploads.Load() || b != staged.bytes.Load() {
			return fmt.Errorf("uploads in progress counted as %d holding %d bytes, the file has %d holding %d",
				u, b, staged.uploads.Load(), staged.bytes.Load())
		}
		if err := verifySkip(s, skip, tx); err != nil {
			return err
		}
		return verifyDerived(tx, blobs, s.sealer)
	})
}

// verifySkip checks that every blob the live lru index holds up to the
// store's heldSkip is held by a snapshot, when the skip is for the
// snapshots holding content now (see heldSkip), and that the skip kept in
// the file is the store's. The skip is read before tx begins: a writer
// holding the write lock may be waiting for tx to end.
func verifySkip(s *Store, skip heldSkip, tx *bbolt.Tx) error {
	meta := tx.Bucket(bucketMeta)
	if kept := loadSkip(meta, u64(meta.Get(keyRevision))); kept.snaps != skip.snaps || !bytes.Equal(kept.key, skip.key) {
		return fmt.Errorf("the file keeps the held skip %q %x, the store has %q %x", kept.snaps, kept.key, skip.snaps, skip.key)
	}
	if skip.key == nil {
		return nil
	}
	w, err := s.begin(tx)
	if err != nil {
		return err
	}
	if fp, err := w.snapshotSet(); err != nil || fp != skip.snaps {
		return err
	}
	holds, err := rules.NewHolds(w)
	if err != nil {
		return err
	}
	c := w.lru.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k, skip.key) <= 0; k, _ = c.Next() {
		var h hash
		copy(h[:], k[8:])
		b, _, err := getBlob(w.blobs, h)
		if err != nil {
			return err
		}
		held, err := w.held(holds, h, b.Size)
		if err != nil {
			return err
		}
		if !held {
			return fmt.Errorf("blob %x is in the lru index before the held skip %x but no snapshot holds it", h, skip.key)
		}
	}
	return nil
}

// skipOf is where s knows the held content of the live lru index ends.
func skipOf(s *Store) heldSkip {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.skip
}

// HeldSkipKey is the key of the live lru index up to which s knows every
// blob held by the snapshots (nil: none).
func HeldSkipKey(s *Store) []byte { return skipOf(s).key }

// verifyDerived checks the counters and the lru, refs and expiry indexes
// against what the tree and the blobs say they should be.
func verifyDerived(tx *bbolt.Tx, blobs map[hash]blobRecord, sl sealer) error {
	d, err := derive(tx, sl)
	if err != nil {
		return err
	}
	c, err := loadCounters(tx.Bucket(bucketMeta))
	if err != nil {
		return err
	}
	want := d.c
	want.Evictions, want.EvictedBytes, want.Expiries = c.Evictions, c.EvictedBytes, c.Expiries
	want.Hits, want.Misses, want.UseSeq = c.Hits, c.Misses, c.UseSeq
	if c != want {
		return fmt.Errorf("counters %+v, the tree and blobs say %+v", c, want)
	}
	lru, hlru := map[string]bool{}, map[string]bool{}
	for h, b := range blobs {
		if b.Pins != d.pins[h] {
			return fmt.Errorf("blob %x: %d pins recorded, %d pinned files and held versions use it", h, b.Pins, d.pins[h])
		}
		if b.Versions != d.vers[h] {
			return fmt.Errorf("blob %x: %d versions recorded, %d use it", h, b.Versions, d.vers[h])
		}
		if int64(b.Use) > c.UseSeq {
			return fmt.Errorf("blob %x: used at %d, after the last use number %d", h, b.Use, c.UseSeq)
		}
		if b.evictable() && !b.heldOnly() {
			lru[string(lruKey(b.Use, h))] = true
		}
		if b.evictable() && b.heldOnly() {
			hlru[string(lruKey(b.Use, h))] = true
		}
		if v := tx.Bucket(bucketBlobs).Get(h[:]); len(v) == blobRecordV1 {
			return fmt.Errorf("blob %x: record in the schema 1 format", h)
		}
	}
	for _, idx := range []struct {
		name []byte
		want map[string]bool
	}{{bucketLRU, lru}, {bucketHistoryLRU, hlru}, {bucketRefs, d.refs}, {bucketExpiry, d.expiry}} {
		got := map[string]bool{}
		err := tx.Bucket(idx.name).ForEach(func(k, _ []byte) error {
			got[string(k)] = true
			if !idx.want[string(k)] {
				return fmt.Errorf("%s index has %x, which it should not", idx.name, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for k := range idx.want {
			if !got[k] {
				return fmt.Errorf("%s index lacks %x", idx.name, k)
			}
		}
	}
	return nil
}

// Downgrade rewrites the closed database at path in the schema 1 layout:
// no counters, no lru, refs or expiry buckets, 24-byte blob records.
func Downgrade(path string) error {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketLRU, bucketRefs, bucketExpiry} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		if err := meta.Delete(keyCounters); err != nil {
			return err
		}
		if err := meta.Put(keySchema, u64bytes(1)); err != nil {
			return err
		}
		blobs := tx.Bucket(bucketBlobs)
		old := map[string][]byte{}
		err := blobs.ForEach(func(k, v []byte) error {
			old[string(k)] = append([]byte(nil), v[:blobRecordV1]...)
			return nil
		})
		if err != nil {
			return err
		}
		for k, v := range old {
			if err := blobs.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return nil
	})
	return errors.Join(err, db.Close())
}

// PersistedUses returns the last use of each blob as committed to the
// file, by hex hash.
func PersistedUses(s *Store) (map[string]uint64, error) {
	out := map[string]uint64{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		blobs := tx.Bucket(bucketBlobs)
		return blobs.ForEach(func(k, _ []byte) error {
			var h hash
			copy(h[:], k)
			b, _, err := getBlob(blobs, h)
			out[hex.EncodeToString(k)] = b.Use
			return err
		})
	})
	return out, err
}

// Commits returns the id of the last write transaction s's file
// committed: each commit (and fsync) adds one.
func Commits(s *Store) (uint64, error) {
	var id uint64
	err := s.db.View(func(tx *bbolt.Tx) error {
		id = uint64(tx.ID())
		return nil
	})
	return id, err
}

// DowngradeTo2 rewrites the closed database at path, which holds no
// versions, in the schema 2 layout: no versions and snapshots buckets,
// 40-byte blob records.
func DowngradeTo2(path string) error {
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketVersions, bucketSnapshots} {
			if err := tx.DeleteBucket(name); err != nil {
				return err
			}
		}
		blobs := tx.Bucket(bucketBlobs)
		old := map[string][]byte{}
		err := blobs.ForEach(func(k, v []byte) error {
			old[string(k)] = append([]byte(nil), v[:40]...)
			return nil
		})
		for k, v := range old {
			if err == nil {
				err = blobs.Put([]byte(k), v)
			}
		}
		if err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, u64bytes(2))
	})
	return errors.Join(err, db.Close())
}

// SealFileBatch is SealFile in transactions of about batch bytes, so a
// test can stop it between two.
func SealFileBatch(ctx context.Context, path string, kek seal.Wrapper, batch int, progress func(SealProgress)) error {
	return sealFile(ctx, path, kek, batch, progress)
}

// ContentKey is the key the content whose plain SHA-256 is sum is stored
// under in s's blobs and chunks buckets: sum itself unless s is keyed.
func ContentKey(s *Store, sum [32]byte) [32]byte { return s.sealer.address(sum) }

// OpenChunk opens v as chunk i of the content stored under h, as a reader
// does with what its read transaction saw.
func OpenChunk(s *Store, h [32]byte, i int64, v []byte) error {
	_, err := s.sealer.open(adBlob, chunkKey(h, i), v)
	return err
}

// WithBatchBytes returns o with staging transactions of about n bytes
// instead of batchBytes (16 MiB), so that a test spans several of them
// with a few MiB of content.
func WithBatchBytes(o Options, n int) *Options {
	o.batchBytes = n
	return &o
}
