package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
	"github.com/nats-io/nuid"
)

// PutChunk stores one chunk of a chunked upload: its bytes go to the chunk
// stream, then the upload's record is updated in the tree bucket. Chunks
// of one upload may arrive at different hosts; the one that commits the
// last missing chunk assembles the file. The chunks of uploads in
// progress count against Options.MaxStoreBytes, as store.Store.PutChunk
// says. It is safe for concurrent use.
func (s *Store) PutChunk(ctx context.Context, c store.Chunk) (store.UploadProgress, error) {
	p := c.File.Path
	h, err := s.limits().Chunk(c)
	if err != nil {
		return store.UploadProgress{}, err
	}
	sum := hex.EncodeToString(h[:])
	// One time limit for the chunk's bytes and its commit.
	ctx, cancel := s.writeCtx(ctx)
	defer cancel()
	if err := s.uploads.Lock(ctx, c.UploadID); err != nil {
		return store.UploadProgress{}, check.PathError("putchunk", p, err)
	}
	defer s.uploads.Unlock(c.UploadID)
	ukey := uploadKey(c.UploadID)

	// The bytes are stored before the record that counts them; a chunk
	// the transaction then refuses has its bytes deleted again.
	s.view.mu.RLock()
	u := s.view.st.uploads[ukey]
	have, seen := uploadChunk{}, false
	if u != nil {
		have, seen = u.Chunks[c.Index]
	}
	s.view.mu.RUnlock()
	parts := 0
	if !seen {
		var err error
		parts, err = s.chunks.write(ctx, c.Data, s.chunkSize, func(j int) string { return s.chunks.uploadSubject(ukey, c.Index, j) })
		if err != nil {
			return store.UploadProgress{}, check.PathError("putchunk", p, err)
		}
	} else if have.SHA256 != sum {
		return store.UploadProgress{}, check.PathError("putchunk", p, fmt.Errorf("%w: chunk %d was received with different bytes", store.ErrUpload, c.Index))
	}

	var prog store.UploadProgress
	ready, stored := false, false
	err = s.update(ctx, func(t *txn) error {
		var err error
		prog, ready, stored, err = t.putChunk(c, ukey, uploadChunk{SHA256: sum, Size: int64(len(c.Data)), Parts: parts})
		return err
	}, nil)
	if err != nil {
		if !seen && !stored {
			s.dropUploadChunk(ctx, ukey, c.Index)
		}
		return store.UploadProgress{}, check.PathError("putchunk", p, err)
	}
	prog.ChunkSHA256 = sum
	if !ready {
		return prog, nil
	}
	res, err := s.complete(ctx, ukey)
	if err != nil {
		return store.UploadProgress{}, check.PathError("putchunk", p, err)
	}
	prog.Complete, prog.Result = true, res
	return prog, nil
}

func (s *Store) dropUploadChunk(ctx context.Context, ukey string, i int) {
	filter := s.chunks.name + "." + ukey + "." + fmt.Sprint(i) + ".>"
	if err := s.chunks.purge(context.WithoutCancel(ctx), filter); err != nil {
		s.log.Warn("nats: deleting a refused chunk", "err", err)
	}
}

// putChunk records chunk c in its upload; ready reports that it was the
// last missing one, stored that the chunk's bytes were already counted.
func (t *txn) putChunk(c store.Chunk, ukey string, ch uploadChunk) (prog store.UploadProgress, ready, stored bool, err error) {
	old := t.upload(ukey)
	var u0 *uploadrec.Upload
	if old != nil {
		u0 = &old.Upload
	}
	if err := rules.CheckChunk(t, u0, c); err != nil {
		return prog, false, false, err
	}
	var u uploadRecord
	if old == nil {
		u = uploadRecord{ID: c.UploadID, Upload: uploadrec.Start(c, t.now), Chunks: map[int]uploadChunk{}}
	} else {
		u = *old
		u.Chunks = maps.Clone(old.Chunks)
	}
	if have, ok := u.Chunks[c.Index]; ok {
		if have.SHA256 != ch.SHA256 {
			return prog, false, false, fmt.Errorf("%w: chunk %d was received with different bytes", store.ErrUpload, c.Index)
		}
		return u.Progress(u.ID), u.Ready(), true, nil
	}
	if err := u.Admit(t.s.limits(), c); err != nil {
		return prog, false, false, err
	}
	u.Chunks[c.Index] = ch
	u.Add(ch.Size, t.now)
	t.setUpload(ukey, &u)
	if err := t.CheckQuota(); err != nil {
		return prog, false, false, fmt.Errorf("chunk %d of upload %s: %w", c.Index, c.UploadID, err)
	}
	// The last chunk is let in: completing turns the upload's bytes into
	// stored content, which evicts then.
	if u.Received < u.Count {
		if _, err := t.MakeRoom(""); err != nil {
			return prog, false, false, fmt.Errorf("chunk %d of upload %s: %w", c.Index, c.UploadID, err)
		}
	}
	return u.Progress(u.ID), u.Ready(), false, nil
}

// uploadParts calls fn with the bytes of every part of u's chunks, in
// order.
func (s *Store) uploadParts(ctx context.Context, ukey string, u *uploadRecord, fn func([]byte) error) error {
	for i := range u.Count {
		ch, ok := u.Chunks[i]
		if !ok {
			return fmt.Errorf("corrupt upload: chunk %d is missing", i)
		}
		for j := range ch.Parts {
			b, err := s.chunks.readUncached(ctx, s.chunks.uploadSubject(ukey, i, j))
			if err != nil {
				return err
			}
			if err := fn(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// complete turns a fully received upload into its file: it hashes the
// chunks, copies them into content chunks unless the store has that
// content, and commits the file and the upload's result together.
func (s *Store) complete(ctx context.Context, ukey string) (store.PutResult, error) {
	s.view.mu.RLock()
	u := s.view.st.uploads[ukey]
	s.view.mu.RUnlock()
	if u == nil {
		return store.PutResult{}, uploadrec.ErrGone
	}
	d := sha256.New()
	var small []byte // the whole content, when it may be stored inline
	if u.Bytes <= s.opts.InlineBytes {
		small = make([]byte, 0, u.Bytes)
	}
	err := s.uploadParts(ctx, ukey, u, func(b []byte) error {
		d.Write(b)
		if small != nil {
			small = append(small, b...)
		}
		return nil
	})
	if err != nil {
		return store.PutResult{}, err
	}
	sum := hex.EncodeToString(d.Sum(nil))
	if sum != u.File.SHA256 {
		err := s.update(ctx, func(t *txn) error {
			if t.upload(ukey) == nil {
				return uploadrec.ErrGone
			}
			t.setUpload(ukey, nil)
			return nil
		}, nil)
		if err != nil {
			return store.PutResult{}, err
		}
		s.dropUpload(ctx, ukey)
		return store.PutResult{}, fmt.Errorf("%w: declared %s, the chunks make %s; the upload is discarded", store.ErrHashMismatch, u.File.SHA256, sum)
	}
	var out *rules.Written
	err = s.update(ctx, func(t *txn) error {
		cur := t.upload(ukey)
		if cur == nil {
			return uploadrec.ErrGone
		}
		if small != nil {
			t.offer(sum, small)
		}
		// The chunks stop counting against the store size limit as the
		// content starts to.
		done := *cur
		done.Chunks = nil
		done.done = &rules.Written{}
		t.setUpload(ukey, &done)
		var err error
		if out, err = rules.Put(t, cur.File, sum, cur.Bytes); err != nil {
			return err
		}
		done.done = out
		return nil
	}, func(ctx context.Context, sum string) (string, error) {
		gen, id := nuid.Next(), s.chunks.addr.id(sum)
		w := s.chunks.writer(ctx, s.chunkSize, func(i int) string { return s.chunks.blobSubject(id, gen, int64(i)) })
		if err := s.uploadParts(ctx, ukey, u, w.write); err != nil {
			w.abort()
			return "", err
		}
		return gen, w.close()
	})
	if err != nil {
		return store.PutResult{}, err
	}
	s.dropUpload(ctx, ukey)
	return out.Result(), nil
}

// dropUpload deletes the chunks of an upload; a failure leaves garbage
// only, which is logged.
func (s *Store) dropUpload(ctx context.Context, ukey string) {
	if err := s.chunks.purge(context.WithoutCancel(ctx), s.chunks.name+"."+ukey+".>"); err != nil {
		s.log.Warn("nats: deleting an upload's chunks", "err", err)
	}
}

// upload returns the upload record under key k as of the transaction,
// nil when there is none.
func (t *txn) upload(k string) *uploadRecord {
	return t.uploads.get(k, t.st.uploads)
}

// setUpload writes the upload record under key k (nil: deleted).
func (t *txn) setUpload(k string, u *uploadRecord) {
	t.uploads.set(k, u)
}
