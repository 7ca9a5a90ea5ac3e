package bolt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
	bbolt "go.etcd.io/bbolt"
)

// batchBytes bounds the content one transaction reads or writes while an
// upload completes or a stream is staged, so memory stays bounded for any
// file size (Options.batchBytes, which only tests set, overrides it).
const batchBytes = 16 << 20

// complete turns the fully received upload id into a file: verify the whole
// hash, stage the content as blob chunks if the store does not have it, then
// write the entry and mark the upload done in one transaction. The caller
// holds the upload's lock.
func (s *Store) complete(ctx context.Context, id string) (store.PutResult, error) {
	u, sum, err := s.hashUpload(ctx, id)
	if err != nil {
		return store.PutResult{}, err
	}
	if sum != u.File.SHA256 {
		err := s.update(ctx, func(w *wtx) error {
			ub := w.tx.Bucket(bucketUploads).Bucket([]byte(id))
			if ub == nil {
				return uploadrec.ErrGone
			}
			u, err := w.s.sealer.readUpload(ub, id)
			if err != nil {
				return err
			}
			return w.dropUpload(id, u)
		})
		if err != nil {
			return store.PutResult{}, err
		}
		return store.PutResult{}, fmt.Errorf("%w: declared %s, the chunks make %s; the upload is discarded", store.ErrHashMismatch, u.File.SHA256, sum)
	}
	h, err := s.sealer.blobKey(sum)
	if err != nil {
		return store.PutResult{}, err
	}

	// Pinned, it cannot be deleted between the check and the final
	// transaction.
	exists, err := s.pinBlob(h)
	if err != nil {
		return store.PutResult{}, err
	}
	defer s.unpin(h)

	if !exists {
		if err := s.stage(ctx, id, h, u.Count); err != nil {
			return store.PutResult{}, err
		}
	}
	var res store.PutResult
	err = s.update(ctx, func(w *wtx) error {
		ub := w.tx.Bucket(bucketUploads).Bucket([]byte(id))
		if ub == nil {
			return uploadrec.ErrGone
		}
		u, err := w.s.sealer.readUpload(ub, id)
		if err != nil {
			return err
		}
		// Staged chunks need only the blob record; content that existed
		// cannot have gone meanwhile, since it is pinned.
		var write func(hash) error
		if exists {
			write = func(hash) error { return fmt.Errorf("content %s vanished while pinned", sum) }
		}
		// The chunks stop counting against the store size limit as the
		// content starts to.
		w.staged.uploads--
		w.staged.bytes -= u.Bytes
		w.s.quota.Charge(w.charges, u.File.Path, -u.Bytes)
		res, err = w.putFile(u.File, sum, u.Bytes, write)
		if err != nil {
			return err
		}
		for i := range u.Count {
			if err := ub.Delete(chunkDataKey(i)); err != nil {
				return err
			}
		}
		u.Result, u.Last = &res, w.now
		return w.s.sealer.writeUpload(ub, id, u)
	})
	return res, err
}

// hashUpload streams the chunks of upload id, in order, through SHA-256, a
// few at a time in short read transactions (received chunks never change).
func (s *Store) hashUpload(ctx context.Context, id string) (*upload, string, error) {
	var u *upload
	d := sha256.New()
	for next := 0; u == nil || next < u.Count; {
		if err := s.check(ctx); err != nil {
			return nil, "", err
		}
		err := s.db.View(func(tx *bbolt.Tx) error {
			ub := tx.Bucket(bucketUploads).Bucket([]byte(id))
			if ub == nil {
				return uploadrec.ErrGone
			}
			var err error
			if u == nil {
				if u, err = s.sealer.readUpload(ub, id); err != nil {
					return err
				}
			}
			next, err = s.sealer.hashChunks(d, ub, id, next, u.Count, s.opts.batchBytes)
			return err
		})
		if err != nil {
			return nil, "", dbErr(err)
		}
	}
	return u, hex.EncodeToString(d.Sum(nil)), nil
}

// hashChunks writes chunks from..count-1 of an upload into d, stopping after
// about limit bytes; it returns the index to continue from.
func (c sealer) hashChunks(d io.Writer, ub *bbolt.Bucket, id string, from, count, limit int) (int, error) {
	read := 0
	i := from
	for ; i < count && read < limit; i++ {
		v, ok, err := c.uploadChunk(ub, id, i)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, fmt.Errorf("corrupt upload: chunk %d is missing", i)
		}
		d.Write(v)
		read += len(v)
	}
	return i, nil
}

// stagePos is how far staging has copied an upload into blob chunks.
type stagePos struct {
	chunk int   // upload chunk to read next
	off   int   // offset in it
	blob  int64 // blob chunk to write next
}

// stage copies the chunks of upload id into the chunks of blob h, in
// transactions of about batchBytes. The blob has no record yet, so nothing
// reads these chunks; the orphan mark written with each batch makes the
// next Open delete them if the process dies before the final transaction.
// The caller has pinned h.
func (s *Store) stage(ctx context.Context, id string, h hash, count int) error {
	pos := stagePos{}
	for pos.chunk < count {
		next := pos
		err := s.update(ctx, func(w *wtx) error {
			next = pos
			ub := w.tx.Bucket(bucketUploads).Bucket([]byte(id))
			if ub == nil {
				return uploadrec.ErrGone
			}
			if err := w.orphan.Put(h[:], []byte{1}); err != nil {
				return err
			}
			return w.stageBatch(h, ub, id, count, &next)
		})
		if err != nil {
			return err
		}
		pos = next
	}
	return nil
}

// stageBatch writes blob chunks from pos on until about batchBytes are
// written or the upload is exhausted, advancing pos.
func (w *wtx) stageBatch(h hash, ub *bbolt.Bucket, id string, count int, pos *stagePos) error {
	buf := make([]byte, 0, w.chunkSize)
	written := 0
	var (
		v  []byte
		vi = -1 // the upload chunk v holds: one larger than a blob chunk is read once
	)
	for written < w.s.opts.batchBytes && pos.chunk < count {
		if vi != pos.chunk {
			var ok bool
			var err error
			if v, ok, err = w.s.sealer.uploadChunk(ub, id, pos.chunk); err != nil {
				return err
			} else if !ok {
				return fmt.Errorf("corrupt upload: chunk %d is missing", pos.chunk)
			}
			vi = pos.chunk
		}
		n := copy(buf[len(buf):cap(buf)], v[pos.off:])
		buf = buf[:len(buf)+n]
		pos.off += n
		if pos.off == len(v) {
			pos.chunk, pos.off = pos.chunk+1, 0
		}
		if int64(len(buf)) == w.chunkSize || (pos.chunk == count && len(buf) > 0) {
			if err := w.putBlobChunk(h, pos.blob, buf); err != nil {
				return err
			}
			pos.blob++
			written += len(buf)
			buf = make([]byte, 0, w.chunkSize)
		}
	}
	return nil
}
