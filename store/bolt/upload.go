package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
	bbolt "go.etcd.io/bbolt"
)

// Keys in an upload's bucket: its metadata, and per received chunk its
// bytes (until the upload completes) and its SHA-256 (until the upload is
// forgotten, so a retried chunk can be checked after completion), as the
// address a blob with that hash would have (sealer.address).
var keyUploadMeta = []byte("m")

func chunkDataKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("c"), uint64(i)) }
func chunkHashKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("h"), uint64(i)) }

// upload is a chunked upload as stored in its bucket (as JSON). Once it
// completed (Result set) the bucket keeps only the chunk hashes, to
// answer retries, until the upload expires.
type upload = uploadrec.Upload

// readUpload reads the metadata of upload id from its bucket b, sealed in
// a keyed store (it names the content's plain SHA-256).
func (c sealer) readUpload(b *bbolt.Bucket, id string) (*upload, error) {
	v, err := c.openValue(adUploadMeta, []byte(id), b.Get(keyUploadMeta))
	if err != nil {
		return nil, fmt.Errorf("upload %s: %w", id, err)
	}
	var u upload
	if err := json.Unmarshal(v, &u); err != nil {
		return nil, fmt.Errorf("corrupt upload: %w", err)
	}
	return &u, nil
}

// writeUpload writes u as the metadata of upload id in its bucket b.
func (c sealer) writeUpload(b *bbolt.Bucket, id string, u *upload) error {
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return b.Put(keyUploadMeta, c.sealValue(adUploadMeta, []byte(id), v))
}

// PutChunk stores one chunk of a chunked upload durably; the upload
// survives a restart. The first chunk received fixes the upload's path,
// count, whole-file hash and metadata; later chunks must repeat the first
// three.
//
// The chunk that completes the upload verifies the whole content against
// c.File.SHA256 (a mismatch discards the upload and fails with
// store.ErrHashMismatch), then writes the file as Put does, in one
// transaction. Large content is copied into the store in bounded
// transactions before that one, so completing an upload needs memory for
// a few chunks, not the whole file. A completed upload is remembered until
// Options.UploadTimeout: a retried chunk with the same bytes reports the
// completion again.
//
// Limits: a chunk announcing (Chunk.TotalSize) or bringing the upload's
// bytes over Options.MaxFileBytes or Options.MaxStoreBytes fails with
// store.ErrLimit and is not stored. Bytes of uploads in progress do not
// count in Stats.StoredBytes but do count against MaxStoreBytes: a chunk
// that would bring the stored content and all uploads' chunks over the
// limit first evicts the least recently used unpinned content, as Put
// does, and fails with store.ErrLimit (the chunk not stored) when what is
// evictable is not enough. The last missing chunk of an upload is always
// let in, since completing turns the upload's bytes into stored content
// and evicts then, as Put does. If the
// completion itself fails with store.ErrLimit (what else is stored is
// pinned), the upload keeps its chunks until it expires, and a retry of
// any chunk tries the completion again.
//
// It is safe for concurrent use; chunks of one upload are handled one at a
// time.
func (s *Store) PutChunk(ctx context.Context, c store.Chunk) (store.UploadProgress, error) {
	p := c.File.Path
	sum, err := s.limits().Chunk(c)
	if err != nil {
		return store.UploadProgress{}, err
	}
	if err := s.uploads.Lock(ctx, c.UploadID); err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	defer s.uploads.Unlock(c.UploadID)

	var prog store.UploadProgress
	ready := false
	err = s.update(ctx, func(w *wtx) error {
		var err error
		prog, ready, err = w.putChunk(c, sum)
		return err
	})
	if err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	prog.ChunkSHA256 = hex.EncodeToString(sum[:])
	if !ready {
		return prog, nil
	}
	res, err := s.complete(ctx, c.UploadID)
	if err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	prog.Complete, prog.Result = true, res
	return prog, nil
}

// putChunk records chunk c (whose hash is sum) and reports whether every
// chunk has now been received, so the upload can complete.
func (w *wtx) putChunk(c store.Chunk, sum hash) (store.UploadProgress, bool, error) {
	ups := w.tx.Bucket(bucketUploads)
	ub := ups.Bucket([]byte(c.UploadID))
	var u *upload
	if ub != nil {
		var err error
		if u, err = w.s.sealer.readUpload(ub, c.UploadID); err != nil {
			return store.UploadProgress{}, false, err
		}
	}
	if err := rules.CheckChunk(w, u, c); err != nil {
		return store.UploadProgress{}, false, err
	}
	if ub == nil {
		var err error
		if ub, err = ups.CreateBucket([]byte(c.UploadID)); err != nil {
			return store.UploadProgress{}, false, err
		}
		start := uploadrec.Start(c, w.now)
		u = &start
		w.staged.uploads++
	}

	// A keyed store keeps the chunk's keyed address: the only chunk of a
	// small upload has the file's hash.
	kept := w.s.sealer.address(sum)
	if old := ub.Get(chunkHashKey(c.Index)); old != nil {
		if !bytes.Equal(old, kept[:]) {
			return store.UploadProgress{}, false, fmt.Errorf("%w: chunk %d was received with different bytes", store.ErrUpload, c.Index)
		}
		// A retry: nothing to store.
		return u.Progress(c.UploadID), u.Ready(), nil
	}
	if err := u.Admit(w.s.limits(), c); err != nil {
		return store.UploadProgress{}, false, err
	}
	if err := w.s.sealer.putUploadChunk(ub, c.UploadID, c.Index, c.Data); err != nil {
		return store.UploadProgress{}, false, err
	}
	if err := ub.Put(chunkHashKey(c.Index), kept[:]); err != nil {
		return store.UploadProgress{}, false, err
	}
	u.Add(int64(len(c.Data)), w.now)
	w.staged.bytes += int64(len(c.Data))
	w.s.quota.Charge(w.charges, c.File.Path, int64(len(c.Data)))
	if err := w.CheckQuota(); err != nil {
		return store.UploadProgress{}, false, fmt.Errorf("chunk %d of upload %s: %w", c.Index, c.UploadID, err)
	}
	// The last chunk is let in: completing turns the upload's bytes into
	// stored content, which evicts then.
	if u.Received < u.Count {
		if _, err := w.makeRoom(hash{}); err != nil {
			return store.UploadProgress{}, false, fmt.Errorf("chunk %d of upload %s: %w", c.Index, c.UploadID, err)
		}
	}
	if err := w.s.sealer.writeUpload(ub, c.UploadID, u); err != nil {
		return store.UploadProgress{}, false, err
	}
	return u.Progress(c.UploadID), u.Ready(), nil
}
