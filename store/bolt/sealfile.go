package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/depotfs/depotfs/internal/seal"
	bbolt "go.etcd.io/bbolt"
)

// keySealing is the meta key of a SealFile in progress: where it goes on
// (a phase byte and the last key it sealed). While it exists the file is
// part sealed and Open refuses it.
var keySealing = []byte("sealing")

// Phases of keySealing: blob chunks, then the chunks of uploads in
// progress, one upload bucket at a time.
const (
	phaseBlobs   = 'b'
	phaseUploads = 'u'
)

// sealBatchBytes bounds the content one SealFile transaction rewrites.
const sealBatchBytes = 32 << 20

// ErrSealing reports a database whose sealing (SealFile) was interrupted.
var ErrSealing = errors.New("sealing of this depot was interrupted: run 'depotfs seal' again with the same key to finish it")

// ErrAlreadySealed reports a SealFile of a depot whose content is sealed
// already (and whose sealing, if any, finished).
var ErrAlreadySealed = errors.New("the depot is sealed already")

// SealProgress is how far SealFile has come, in stored chunks.
type SealProgress struct {
	Done, Total int64
}

// SealFile seals the content of the database at path, which no process
// may have open and whose content is in the clear, under a new data key
// wrapped by kek: every chunk of stored content and of uploads in
// progress is rewritten sealed, and content renamed to keyed addresses
// (see sealaddr.go), in transactions of about 32 MiB, each
// recording how far it came, so a SealFile that is stopped (killed, ctx
// ended, a crash) goes on where it stopped when called again with the same
// kek; until one finishes, Open refuses the file (ErrSealing). progress,
// when not nil, is called after each transaction. A database sealed under
// plain addresses (by a build before keyed addresses) is moved to keyed
// addresses the same way, keeping its data key, which kek must wrap; one
// under keyed addresses already is refused, unchanged, with
// ErrAlreadySealed.
//
// The clear bytes stay in the file's free pages until it is compacted:
// the caller compacts it afterwards (Compact), as 'depotfs seal' does.
func SealFile(ctx context.Context, path string, kek seal.Wrapper, progress func(SealProgress)) error {
	return sealFile(ctx, path, kek, sealBatchBytes, progress)
}

// sealFile is SealFile with transactions of about batch bytes.
func sealFile(ctx context.Context, path string, kek seal.Wrapper, batch int, progress func(SealProgress)) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("bolt: seal: %w", err)
	}
	db, lock, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout})
	if err != nil {
		return fmt.Errorf("bolt: seal: %w", err)
	}
	defer lock.Close()
	err = sealDB(ctx, db, kek, batch, progress)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bolt: seal %s: %w", path, err)
	}
	return nil
}

// sealDB is SealFile on an open database.
func sealDB(ctx context.Context, db *bbolt.DB, kek seal.Wrapper, batch int, progress func(SealProgress)) error {
	var (
		key  *seal.Key
		pos  []byte
		prog SealProgress
	)
	err := db.Update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil || meta.Get(keySchema) == nil {
			return ErrNotDepot
		}
		if v := u64(meta.Get(keySchema)); v != schemaVersion {
			return fmt.Errorf("schema version %d: upgrade it first ('depotfs upgrade'), then seal it", v)
		}
		rec := meta.Get(keySeal)
		pos = bytes.Clone(meta.Get(keySealing))
		switch {
		case rec != nil && pos == nil:
			return toKeyed(ctx, meta, kek, rec, &key, &pos)
		case rec != nil:
			r, err := seal.ParseRecord(rec)
			if err != nil {
				return err
			}
			key, err = seal.Open(ctx, kek, r)
			return err
		}
		k, r, err := seal.NewKeyedRecord(ctx, kek)
		if err != nil {
			return err
		}
		key, pos = k, []byte{stepChunksOut}
		if err := meta.Put(keySeal, r.Marshal()); err != nil {
			return err
		}
		// The eviction walk's skip names an lru key, a plain hash, which
		// the renaming would leave behind: it is only a shortcut, and
		// the next walk finds it again.
		if err := meta.Delete(keyHeldSkip); err != nil {
			return err
		}
		return meta.Put(keySealing, pos)
	})
	if err != nil {
		return err
	}
	if key.Keyed() {
		return addressDB(ctx, db, key, pos, batch, progress)
	}
	// The totals, and what a stopped SealFile did already: the blob
	// chunks up to its key, or all of them and the uploads up to its id.
	// (A SealFile begun by a build before keyed addresses goes on as it
	// began: under plain addresses.)
	err = db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketChunks).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			prog.Total++
			if pos[0] == phaseUploads || (len(pos) > 1 && bytes.Compare(k, pos[1:]) <= 0) {
				prog.Done++
			}
		}
		return tx.Bucket(bucketUploads).ForEachBucket(func(id []byte) error {
			n := int64(countUploadChunks(tx.Bucket(bucketUploads).Bucket(id)))
			prog.Total += n
			if pos[0] == phaseUploads && len(pos) > 1 && bytes.Compare(id, pos[1:]) <= 0 {
				prog.Done += n
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	s := sealer{key: key}
	sealClear := func(prefix string, ad, v []byte) ([]byte, bool, error) { return s.seal(prefix, ad, v), true, nil }
	for pos != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := db.Update(func(tx *bbolt.Tx) error {
			var n int64
			var err error
			if pos[0] == phaseBlobs {
				pos, n, err = sealBlobBatch(tx, sealClear, pos, batch)
			} else {
				pos, n, err = sealUploadBatch(tx, sealClear, pos)
			}
			if err != nil {
				return err
			}
			prog.Done += n
			if pos == nil {
				return tx.Bucket(bucketMeta).Delete(keySealing)
			}
			return tx.Bucket(bucketMeta).Put(keySealing, pos)
		})
		if err != nil {
			return err
		}
		if progress != nil {
			progress(prog)
		}
	}
	return nil
}

// countUploadChunks counts the data chunks of an upload bucket.
func countUploadChunks(ub *bbolt.Bucket) int {
	n := 0
	c := ub.Cursor()
	for k, _ := c.Seek([]byte("c")); k != nil && k[0] == 'c'; k, _ = c.Next() {
		n++
	}
	return n
}

// rewrite returns what to store in place of chunk v, whose associated
// data is prefix and ad, and whether to store it at all: SealFile seals
// clear chunks, the resealer opens a chunk and seals it under the current
// data key unless it is sealed under it already.
type rewrite func(prefix string, ad, v []byte) ([]byte, bool, error)

// sealBlobBatch rewrites blob chunks after the key in pos (phaseBlobs and
// the last key done) with rw until about batchBytes; it returns where to
// go on (the uploads phase after the last chunk) and how many it went
// through.
func sealBlobBatch(tx *bbolt.Tx, rw rewrite, pos []byte, batchBytes int) ([]byte, int64, error) {
	b := tx.Bucket(bucketChunks)
	c := b.Cursor()
	var k, v []byte
	if len(pos) == 1 {
		k, v = c.First()
	} else if k, v = c.Seek(pos[1:]); k != nil && bytes.Equal(k, pos[1:]) {
		k, v = c.Next()
	}
	type kv struct{ k, v []byte }
	var batch []kv
	var last []byte
	size, n := 0, int64(0)
	for ; k != nil && size < batchBytes; k, v = c.Next() {
		out, write, err := rw(adBlob, k, v)
		if err != nil {
			return nil, 0, err
		}
		if write {
			batch = append(batch, kv{bytes.Clone(k), out})
		}
		size += len(v)
		last = k
		n++
	}
	// Written after the cursor is done: bbolt's cursors do not survive
	// changes to their bucket.
	if k != nil {
		last = bytes.Clone(last)
	}
	for _, e := range batch {
		if err := b.Put(e.k, e.v); err != nil {
			return nil, 0, err
		}
	}
	if k == nil {
		return []byte{phaseUploads}, n, nil
	}
	return append([]byte{phaseBlobs}, last...), n, nil
}

// sealUploadBatch rewrites with rw the chunks of the next upload after the
// one named in pos (phaseUploads and the last upload id done): one upload a
// transaction. It returns nil after the last.
func sealUploadBatch(tx *bbolt.Tx, rw rewrite, pos []byte) ([]byte, int64, error) {
	ups := tx.Bucket(bucketUploads)
	c := ups.Cursor()
	var k, v []byte
	if len(pos) == 1 {
		k, v = c.First()
	} else if k, v = c.Seek(pos[1:]); k != nil && bytes.Equal(k, pos[1:]) {
		k, v = c.Next()
	}
	for ; k != nil && v != nil; k, v = c.Next() {
		// Not a nested bucket: not an upload.
	}
	if k == nil {
		return nil, 0, nil
	}
	id := bytes.Clone(k)
	ub := ups.Bucket(id)
	var keys, vals [][]byte
	uc := ub.Cursor()
	for ck, cv := uc.Seek([]byte("c")); ck != nil && ck[0] == 'c'; ck, cv = uc.Next() {
		keys, vals = append(keys, bytes.Clone(ck)), append(vals, bytes.Clone(cv))
	}
	for i, ck := range keys {
		out, write, err := rw(adUpload, uploadChunkAD(string(id), int(u64(ck[1:]))), vals[i])
		if err != nil {
			return nil, 0, err
		}
		if write {
			if err := ub.Put(ck, out); err != nil {
				return nil, 0, err
			}
		}
	}
	return append([]byte{phaseUploads}, id...), int64(len(keys)), nil
}
