package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// Keys in an upload's bucket: its metadata, and per received chunk its
// bytes (until the upload completes) and its SHA-256 (until the upload is
// forgotten, so a retried chunk can be checked after completion).
var keyUploadMeta = []byte("m")

func chunkDataKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("c"), uint64(i)) }
func chunkHashKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("h"), uint64(i)) }

// upload is a chunked upload as stored in its bucket.
type upload struct {
	Count    int              `json:"count"`
	File     store.PutRequest `json:"file"` // without Data
	Received int              `json:"received"`
	Bytes    int64            `json:"bytes"`
	Total    int64            `json:"total,omitzero"` // announced size; 0: not announced
	Started  time.Time        `json:"started"`
	Last     time.Time        `json:"last"` // arrival of the last chunk, or completion
	// Result is set once the upload completed; the bucket then keeps only
	// the chunk hashes, to answer retries, until the upload expires.
	Result *store.PutResult `json:"result,omitzero"`
}

func (u *upload) progress(id string) store.UploadProgress {
	p := store.UploadProgress{UploadID: id, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes}
	if u.Result != nil {
		p.Complete, p.Result = true, *u.Result
	}
	return p
}

func (u *upload) info(id string) store.UploadInfo {
	return store.UploadInfo{ID: id, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes,
		Total: u.Total, Started: u.Started, Last: u.Last, Complete: u.Result != nil}
}

func readUpload(b *bbolt.Bucket) (*upload, error) {
	var u upload
	if err := json.Unmarshal(b.Get(keyUploadMeta), &u); err != nil {
		return nil, fmt.Errorf("corrupt upload: %w", err)
	}
	return &u, nil
}

func writeUpload(b *bbolt.Bucket, u *upload) error {
	v, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return b.Put(keyUploadMeta, v)
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
		if u, err = readUpload(ub); err != nil {
			return store.UploadProgress{}, false, err
		}
		switch {
		case c.Count != u.Count:
			return store.UploadProgress{}, false, fmt.Errorf("%w: count %d, the upload has %d", store.ErrUpload, c.Count, u.Count)
		case c.File.Path != u.File.Path:
			return store.UploadProgress{}, false, fmt.Errorf("%w: the upload is for %s", store.ErrUpload, u.File.Path)
		case c.File.SHA256 != u.File.SHA256:
			return store.UploadProgress{}, false, fmt.Errorf("%w: sha256 %s, the upload has %s", store.ErrUpload, c.File.SHA256, u.File.SHA256)
		}
	}
	if u == nil || u.Result == nil {
		// Fail early on a path the upload could never be written to.
		if err := checkParents(w.tree, c.File.Path); err != nil {
			return store.UploadProgress{}, false, err
		}
		r, err := getEntry(w.tree, c.File.Path)
		if err != nil {
			return store.UploadProgress{}, false, err
		}
		if err := checkWrite(r, c.File.IfAbsent, c.File.IfRevision); err != nil {
			return store.UploadProgress{}, false, err
		}
	}
	if ub == nil {
		var err error
		if ub, err = ups.CreateBucket([]byte(c.UploadID)); err != nil {
			return store.UploadProgress{}, false, err
		}
		file := c.File
		file.Data = nil
		u = &upload{Count: c.Count, File: file, Started: w.now}
		w.staged.uploads++
	}

	if old := ub.Get(chunkHashKey(c.Index)); old != nil {
		if !bytes.Equal(old, sum[:]) {
			return store.UploadProgress{}, false, fmt.Errorf("%w: chunk %d was received with different bytes", store.ErrUpload, c.Index)
		}
		// A retry: nothing to store.
		return u.progress(c.UploadID), u.Result == nil && u.Received == u.Count, nil
	}
	if err := w.admitChunk(u, c); err != nil {
		return store.UploadProgress{}, false, err
	}
	if err := ub.Put(chunkDataKey(c.Index), c.Data); err != nil {
		return store.UploadProgress{}, false, err
	}
	if err := ub.Put(chunkHashKey(c.Index), sum[:]); err != nil {
		return store.UploadProgress{}, false, err
	}
	u.Received++
	u.Bytes += int64(len(c.Data))
	u.Last = w.now
	w.staged.bytes += int64(len(c.Data))
	// The last chunk is let in: completing turns the upload's bytes into
	// stored content, which evicts then.
	if u.Received < u.Count {
		if _, err := w.makeRoom(hash{}); err != nil {
			return store.UploadProgress{}, false, fmt.Errorf("chunk %d of upload %s: %w", c.Index, c.UploadID, err)
		}
	}
	if err := writeUpload(ub, u); err != nil {
		return store.UploadProgress{}, false, err
	}
	return u.progress(c.UploadID), u.Received == u.Count, nil
}

// admitChunk checks a new chunk c of upload u against the size the upload
// announced and the store's limits, and records an announced size.
func (w *wtx) admitChunk(u *upload, c store.Chunk) error {
	if c.TotalSize > 0 {
		if u.Total > 0 && c.TotalSize != u.Total {
			return fmt.Errorf("%w: total size %d, the upload announced %d", store.ErrUpload, c.TotalSize, u.Total)
		}
		u.Total = c.TotalSize
	}
	bytes := u.Bytes + int64(len(c.Data))
	if err := w.s.limits().Size(max(bytes, u.Total)); err != nil {
		return err
	}
	last := u.Received+1 == u.Count
	if u.Total > 0 && (bytes > u.Total || (last && bytes != u.Total)) {
		return fmt.Errorf("%w: the chunks hold %d bytes, the upload announced %d", store.ErrUpload, bytes, u.Total)
	}
	return nil
}
