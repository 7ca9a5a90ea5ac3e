package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/internal/seal"
	bbolt "go.etcd.io/bbolt"
)

// Sealing an existing depot under keyed addresses (SealFile with a
// version 2 record) renames every content address and enciphers every
// plain hash, in steps that each go on where a stopped SealFile left
// them. The progress key (keySealing) is the step's number, then, for the
// steps that rewrite values in place, the last key done.
//
// A bucket whose keys name content (chunks, blobs, orphans, refs, the
// lru indexes) cannot be rewritten in place: a key renamed ahead of the
// cursor would be met again, and an address looks like a hash. It is
// moved out to a spare bucket under its new keys, a batch of keys a
// transaction, then moved back unchanged: what is left in the source is
// what is still to move, so the step needs no position. Chunks are sealed
// as they move out.
const (
	stepChunksOut = 1 + iota
	stepChunksBack
	stepBlobsOut
	stepBlobsBack
	stepOrphansOut
	stepOrphansBack
	stepRefsOut
	stepRefsBack
	stepLRUOut
	stepLRUBack
	stepHistoryLRUOut
	stepHistoryLRUBack
	stepUploads   // each upload's chunks, metadata and chunk hashes, in place
	stepTree      // entry records' hashes, in place
	stepVersions  // retained versions' records' hashes, in place
	stepChanges   // the change log's events, in place
	stepAddrsDone // none left
)

// spare is the bucket a bucket's entries move out to under their new keys.
var spare = []byte("sealing.spare")

// keySealedBefore is the meta key of a keyed SealFile of a depot sealed
// under plain addresses (a version 1 record): its chunks, blob and upload,
// are sealed already, under the same data key, and the blob chunks are
// opened and sealed again for their new addresses.
var keySealedBefore = []byte("sealing.sealed")

// toKeyed starts the keyed SealFile of a depot sealed under plain
// addresses, whose seal record is rec, in meta: it gives the data key an
// address key (a version 2 record) and sets key and pos. A depot sealed
// under keyed addresses is refused with ErrAlreadySealed, one whose
// reencryption is unfinished with ErrResealing.
func toKeyed(ctx context.Context, meta *bbolt.Bucket, kek seal.Wrapper, rec []byte, key **seal.Key, pos *[]byte) error {
	r, err := seal.ParseRecord(rec)
	switch {
	case err != nil:
		return err
	case len(r.Addr) > 0:
		return ErrAlreadySealed
	case meta.Get(keyResealing) != nil:
		return ErrResealing
	}
	k, r, err := seal.Keyed(ctx, kek, r)
	if err != nil {
		return err
	}
	*key, *pos = k, []byte{stepChunksOut}
	return errors.Join(meta.Put(keySeal, r.Marshal()), meta.Put(keySealedBefore, []byte{1}),
		meta.Delete(keyHeldSkip), meta.Put(keySealing, *pos))
}

// addressed is a bucket whose keys a keyed SealFile renames, and how.
type addressed struct {
	bucket []byte
	// rename returns the new key and value of the entry k, v (sealed, for
	// a chunk); a chunk sealed already (sealed) is opened first.
	rename func(c sealer, k, v []byte, sealed bool) ([]byte, []byte, error)
}

// addressSteps are the renamed buckets, by the number of the step that
// moves them out (the next one moves them back).
var addressSteps = map[byte]addressed{
	stepChunksOut: {bucketChunks, func(c sealer, k, v []byte, sealed bool) ([]byte, []byte, error) {
		if sealed {
			var err error
			if v, err = c.open(adBlob, k, v); err != nil {
				return nil, nil, err
			}
		}
		nk := append(addressOf(c, k[:32]), k[32:]...)
		return nk, c.seal(adBlob, nk, v), nil
	}},
	stepBlobsOut:   {bucketBlobs, renameAt(0)},
	stepOrphansOut: {bucketOrphans, renameAt(0)},
	stepRefsOut:    {bucketRefs, renameAt(0)},
	// An lru key is a use number (8 bytes), then the hash.
	stepLRUOut:        {bucketLRU, renameAt(8)},
	stepHistoryLRUOut: {bucketHistoryLRU, renameAt(8)},
}

// renameAt renames a key holding a content hash at offset at, keeping the
// value.
func renameAt(at int) func(c sealer, k, v []byte, sealed bool) ([]byte, []byte, error) {
	return func(c sealer, k, v []byte, _ bool) ([]byte, []byte, error) {
		nk := append(bytes.Clone(k[:at]), addressOf(c, k[at:at+32])...)
		return append(nk, k[at+32:]...), bytes.Clone(v), nil
	}
}

// addressOf is c's address of the raw hash b.
func addressOf(c sealer, b []byte) []byte {
	a := c.address(hash(b))
	return a[:]
}

// moveBatchKeys bounds the entries one moving transaction takes (besides
// the batch bytes of chunks).
const moveBatchKeys = 20000

// addressBatch runs one transaction's worth of step pos[0] of a keyed
// SealFile with sealer c (of a depot whose chunks are sealed already,
// under plain addresses, when sealed holds); it returns the progress key
// after it (stepAddrsDone after the last) and the chunks it sealed.
func addressBatch(tx *bbolt.Tx, c sealer, pos []byte, batch int, sealed bool) ([]byte, int64, error) {
	step := pos[0]
	if step <= stepHistoryLRUBack {
		out := step
		if (step-stepChunksOut)%2 == 1 {
			out--
		}
		a := addressSteps[out]
		sp, err := tx.CreateBucketIfNotExists(spare)
		if err != nil {
			return nil, 0, err
		}
		src, dst := tx.Bucket(a.bucket), sp
		rename := a.rename
		if step != out {
			src, dst = sp, tx.Bucket(a.bucket)
			rename = func(_ sealer, k, v []byte, _ bool) ([]byte, []byte, error) {
				return bytes.Clone(k), bytes.Clone(v), nil
			}
		}
		n, more, err := moveBatch(c, src, dst, func(c sealer, k, v []byte) ([]byte, []byte, error) { return rename(c, k, v, sealed) }, batch)
		if err != nil || more {
			if step == stepChunksOut {
				return pos, n, err
			}
			return pos, 0, err
		}
		if step != out {
			if err := tx.DeleteBucket(spare); err != nil {
				return nil, 0, err
			}
		}
		if step == stepChunksOut {
			return []byte{step + 1}, n, nil
		}
		return []byte{step + 1}, 0, nil
	}
	switch step {
	case stepUploads:
		next, n, err := sealUploadBatch(tx, func(prefix string, ad, v []byte) ([]byte, bool, error) {
			return c.seal(prefix, ad, v), !sealed, nil
		}, append([]byte{phaseUploads}, pos[1:]...))
		if err != nil {
			return nil, 0, err
		}
		if next == nil {
			return []byte{stepTree}, n, nil
		}
		id := next[1:]
		if err := addressUpload(tx.Bucket(bucketUploads).Bucket(id), string(id), c); err != nil {
			return nil, 0, err
		}
		return append([]byte{stepUploads}, id...), n, nil
	case stepTree, stepVersions:
		b, head := tx.Bucket(bucketTree), 0
		if step == stepVersions {
			b, head = tx.Bucket(bucketVersions), versionHead
		}
		return rewriteBatch(b, pos, func(_, v []byte) ([]byte, error) {
			if len(v) < head {
				return nil, errCorrupt
			}
			r, err := decodeRecord(v[head:], sealer{})
			if err != nil {
				return nil, err
			}
			nv, err := encodeRecord(r, c)
			return append(bytes.Clone(v[:head]), nv...), err
		})
	case stepChanges:
		return rewriteBatch(tx.Bucket(bucketChanges), pos, func(k, v []byte) ([]byte, error) {
			return c.sealValue(adChange, k, v), nil
		})
	}
	return nil, 0, fmt.Errorf("sealing: unknown step %d", step)
}

// moveBatch moves up to moveBatchKeys entries, or about batch bytes, from
// the start of src to dst, renamed; it returns the chunks moved and
// whether src has more.
func moveBatch(c sealer, src, dst *bbolt.Bucket, rename func(c sealer, k, v []byte) ([]byte, []byte, error), batch int) (int64, bool, error) {
	type kv struct{ k, v []byte }
	var moved []kv
	var old [][]byte
	size := 0
	cur := src.Cursor()
	k, v := cur.First()
	for ; k != nil && len(moved) < moveBatchKeys && size < batch; k, v = cur.Next() {
		nk, nv, err := rename(c, k, v)
		if err != nil {
			return 0, false, err
		}
		moved, old = append(moved, kv{nk, nv}), append(old, bytes.Clone(k))
		size += len(k) + len(v)
	}
	more := k != nil
	// Written after the cursor is done: bbolt's cursors do not survive
	// changes to their bucket.
	for i, e := range moved {
		if err := src.Delete(old[i]); err != nil {
			return 0, false, err
		}
		if err := dst.Put(e.k, e.v); err != nil {
			return 0, false, err
		}
	}
	return int64(len(moved)), more, nil
}

// rewriteBatch rewrites with fn the values of up to moveBatchKeys entries
// of b after the key in pos[1:] (from the first when there is none),
// keeping their keys; it returns the progress key after them: the step
// and the last key, or the next step after the last entry.
func rewriteBatch(b *bbolt.Bucket, pos []byte, fn func(k, v []byte) ([]byte, error)) ([]byte, int64, error) {
	cur := b.Cursor()
	var k, v []byte
	if len(pos) == 1 {
		k, v = cur.First()
	} else if k, v = cur.Seek(pos[1:]); k != nil && bytes.Equal(k, pos[1:]) {
		k, v = cur.Next()
	}
	type kv struct{ k, v []byte }
	var out []kv
	for ; k != nil && len(out) < moveBatchKeys; k, v = cur.Next() {
		if v == nil {
			continue // a nested bucket
		}
		nv, err := fn(k, v)
		if err != nil {
			return nil, 0, fmt.Errorf("%x: %w", k, err)
		}
		out = append(out, kv{bytes.Clone(k), nv})
	}
	for _, e := range out {
		if err := b.Put(e.k, e.v); err != nil {
			return nil, 0, err
		}
	}
	if k == nil {
		return []byte{pos[0] + 1}, 0, nil
	}
	return append([]byte{pos[0]}, out[len(out)-1].k...), 0, nil
}

// addressUpload seals the metadata of upload id, in its bucket ub, and
// renames the chunk hashes it keeps to their addresses.
func addressUpload(ub *bbolt.Bucket, id string, c sealer) error {
	meta := ub.Get(keyUploadMeta)
	if meta == nil {
		return fmt.Errorf("corrupt upload %s: no metadata", id)
	}
	type kv struct{ k, v []byte }
	out := []kv{{keyUploadMeta, c.sealValue(adUploadMeta, []byte(id), meta)}}
	cur := ub.Cursor()
	for k, v := cur.Seek([]byte("h")); k != nil && k[0] == 'h'; k, v = cur.Next() {
		if len(v) != 32 {
			return fmt.Errorf("corrupt upload %s: chunk hash of %d bytes", id, len(v))
		}
		out = append(out, kv{bytes.Clone(k), addressOf(c, v)})
	}
	for _, e := range out {
		if err := ub.Put(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}

// addressDB is sealDB for a keyed data key: it runs the steps from the one
// in pos until none is left, then deletes the progress key.
func addressDB(ctx context.Context, db *bbolt.DB, key *seal.Key, pos []byte, batch int, progress func(SealProgress)) error {
	c := sealer{key: key}
	var prog SealProgress
	sealed := false
	// The totals, and what a stopped SealFile did already: the chunks
	// moved out to the spare bucket, or all of them, and the uploads up
	// to its id.
	err := db.View(func(tx *bbolt.Tx) error {
		sealed = tx.Bucket(bucketMeta).Get(keySealedBefore) != nil
		var moved int64
		if sp := tx.Bucket(spare); sp != nil && pos[0] <= stepChunksBack {
			moved = int64(sp.Stats().KeyN)
		}
		prog.Total = int64(tx.Bucket(bucketChunks).Stats().KeyN) + moved
		switch {
		case pos[0] == stepChunksOut:
			prog.Done = moved
		case pos[0] > stepChunksOut:
			prog.Done = prog.Total
		}
		ups := tx.Bucket(bucketUploads)
		return ups.ForEachBucket(func(id []byte) error {
			n := int64(countUploadChunks(ups.Bucket(id)))
			prog.Total += n
			if pos[0] > stepUploads || (pos[0] == stepUploads && len(pos) > 1 && bytes.Compare(id, pos[1:]) <= 0) {
				prog.Done += n
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	for pos[0] != stepAddrsDone {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := db.Update(func(tx *bbolt.Tx) error {
			next, n, err := addressBatch(tx, c, pos, batch, sealed)
			if err != nil {
				return err
			}
			pos = next
			prog.Done = min(prog.Done+n, prog.Total)
			if pos[0] == stepAddrsDone {
				prog.Done = prog.Total
				return errors.Join(tx.Bucket(bucketMeta).Delete(keySealing), tx.Bucket(bucketMeta).Delete(keySealedBefore))
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
