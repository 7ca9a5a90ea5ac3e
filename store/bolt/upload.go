package bolt

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/depotfs/depotfs/depotpath"
	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// maxUploadID bounds the length of an upload ID in bytes.
const maxUploadID = 256

// keyUploadMeta is the key of an upload's metadata in its bucket; chunks
// are stored under chunkIndexKey.
var keyUploadMeta = []byte("m")

func chunkIndexKey(i int) []byte { return binary.BigEndian.AppendUint64([]byte("c"), uint64(i)) }

// upload is an upload in progress as stored in its bucket.
type upload struct {
	Count    int              `json:"count"`
	File     store.PutRequest `json:"file"` // without Data
	Received int              `json:"received"`
	Bytes    int64            `json:"bytes"`
	Started  time.Time        `json:"started"`
	Last     time.Time        `json:"last"` // arrival of the last chunk
}

func (u *upload) progress(id string) store.UploadProgress {
	return store.UploadProgress{UploadID: id, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes}
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

// lookup returns the value at k and whether k exists (a stored value may
// be empty).
func lookup(b *bbolt.Bucket, k []byte) ([]byte, bool) {
	ck, v := b.Cursor().Seek(k)
	return v, ck != nil && bytes.Equal(ck, k)
}

// PutChunk stores one chunk of a chunked upload durably; the upload
// survives a restart. The chunk that completes the upload also verifies the
// whole content against c.File.SHA256 and, in the same transaction, writes
// the file as Put does (a mismatch discards the upload and fails with
// store.ErrHashMismatch). The first chunk received fixes the upload's path,
// count, hash and metadata. It is safe for concurrent use; chunks of one
// upload are handled one at a time.
func (s *Store) PutChunk(ctx context.Context, c store.Chunk) (store.UploadProgress, error) {
	p := c.File.Path
	if err := checkPath("putchunk", p); err != nil {
		return store.UploadProgress{}, err
	}
	if err := checkChunk(c); err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	if c.SHA256 != "" {
		sum := sha256.Sum256(c.Data)
		if got := hex.EncodeToString(sum[:]); got != c.SHA256 {
			return store.UploadProgress{}, pathErr("putchunk", p, fmt.Errorf("%w: chunk %d declared %s, has %s", store.ErrHashMismatch, c.Index, c.SHA256, got))
		}
	}
	if err := s.uploads.lock(ctx, c.UploadID); err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	defer s.uploads.unlock(c.UploadID)

	var prog store.UploadProgress
	_, err := s.update(ctx, func(w *wtx) error {
		var err error
		prog, err = w.putChunk(c)
		return err
	})
	if err != nil {
		return store.UploadProgress{}, pathErr("putchunk", p, err)
	}
	return prog, nil
}

// checkChunk validates what can be checked without the store.
func checkChunk(c store.Chunk) error {
	switch {
	case c.UploadID == "":
		return fmt.Errorf("%w: empty upload id", store.ErrUpload)
	case len(c.UploadID) > maxUploadID:
		return fmt.Errorf("%w: upload id over %d bytes", store.ErrUpload, maxUploadID)
	case c.Count < 1:
		return fmt.Errorf("%w: chunk count %d", store.ErrUpload, c.Count)
	case c.Index < 0 || c.Index >= c.Count:
		return fmt.Errorf("%w: chunk index %d outside 0..%d", store.ErrUpload, c.Index, c.Count-1)
	case c.File.Path == depotpath.Root:
		return fmt.Errorf("%w: the root is a directory", store.ErrConflict)
	}
	if c.File.SHA256 == "" {
		return fmt.Errorf("%w: the whole file's sha256 is required", store.ErrUpload)
	}
	if _, err := parseHash(c.File.SHA256); err != nil {
		return fmt.Errorf("%w: %w", store.ErrUpload, err)
	}
	return nil
}

func (w *wtx) putChunk(c store.Chunk) (store.UploadProgress, error) {
	// Fail early on a path the upload could never be written to.
	if err := checkParents(w.tree, c.File.Path); err != nil {
		return store.UploadProgress{}, err
	}
	r, err := getEntry(w.tree, c.File.Path)
	if err != nil {
		return store.UploadProgress{}, err
	}
	if err := checkWrite(r, c.File.IfAbsent, c.File.IfRevision); err != nil {
		return store.UploadProgress{}, err
	}

	ups := w.tx.Bucket(bucketUploads)
	ub := ups.Bucket([]byte(c.UploadID))
	var u *upload
	if ub == nil {
		if ub, err = ups.CreateBucket([]byte(c.UploadID)); err != nil {
			return store.UploadProgress{}, err
		}
		file := c.File
		file.Data = nil
		u = &upload{Count: c.Count, File: file, Started: w.now}
	} else {
		if u, err = readUpload(ub); err != nil {
			return store.UploadProgress{}, err
		}
		switch {
		case c.Count != u.Count:
			return store.UploadProgress{}, fmt.Errorf("%w: count %d, the upload has %d", store.ErrUpload, c.Count, u.Count)
		case c.File.Path != u.File.Path:
			return store.UploadProgress{}, fmt.Errorf("%w: the upload is for %s", store.ErrUpload, u.File.Path)
		case c.File.SHA256 != u.File.SHA256:
			return store.UploadProgress{}, fmt.Errorf("%w: sha256 %s, the upload has %s", store.ErrUpload, c.File.SHA256, u.File.SHA256)
		}
	}
	key := chunkIndexKey(c.Index)
	if old, ok := lookup(ub, key); ok {
		if !bytes.Equal(old, c.Data) {
			return store.UploadProgress{}, fmt.Errorf("%w: chunk %d was received with different bytes", store.ErrUpload, c.Index)
		}
	} else {
		if err := ub.Put(key, c.Data); err != nil {
			return store.UploadProgress{}, err
		}
		u.Received++
		u.Bytes += int64(len(c.Data))
	}
	u.Last = w.now
	if err := writeUpload(ub, u); err != nil {
		return store.UploadProgress{}, err
	}
	prog := u.progress(c.UploadID)
	if u.Received < u.Count {
		return prog, nil
	}

	sum := uploadHash(ub, u.Count)
	if sum != u.File.SHA256 {
		if err := ups.DeleteBucket([]byte(c.UploadID)); err != nil {
			return store.UploadProgress{}, err
		}
		w.fail = fmt.Errorf("%w: declared %s, the chunks make %s; the upload is discarded", store.ErrHashMismatch, u.File.SHA256, sum)
		return store.UploadProgress{}, nil
	}
	res, err := w.putFile(u.File, sum, u.Bytes, func(h hash) error { return w.copyUpload(h, ub, u.Count) })
	if err != nil {
		return store.UploadProgress{}, err
	}
	if err := ups.DeleteBucket([]byte(c.UploadID)); err != nil {
		return store.UploadProgress{}, err
	}
	prog.Complete, prog.Result = true, res
	return prog, nil
}

// uploadHash streams an upload's chunks, in order, through SHA-256.
func uploadHash(ub *bbolt.Bucket, count int) string {
	d := sha256.New()
	for i := range count {
		d.Write(ub.Get(chunkIndexKey(i)))
	}
	return hex.EncodeToString(d.Sum(nil))
}

// copyUpload re-chunks an upload's chunks into blob h's chunks.
func (w *wtx) copyUpload(h hash, ub *bbolt.Bucket, count int) error {
	buf := make([]byte, 0, w.chunkSize)
	next := int64(0)
	flush := func() error {
		if err := w.chunks.Put(chunkKey(h, next), buf); err != nil {
			return err
		}
		next++
		buf = make([]byte, 0, w.chunkSize)
		return nil
	}
	for i := range count {
		d := ub.Get(chunkIndexKey(i))
		for len(d) > 0 {
			n := copy(buf[len(buf):cap(buf)], d)
			buf, d = buf[:len(buf)+n], d[n:]
			if int64(len(buf)) == w.chunkSize {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	if len(buf) > 0 {
		return flush()
	}
	return nil
}

// ExpireUploads deletes the uploads that received no chunk for
// Options.UploadTimeout, by the store's clock, and returns how many it
// deleted. Uploads busy with a chunk are left alone. The store's janitor
// calls it periodically; it is exported so tests (with Options.Now) and
// operators can run it at will. It is safe for concurrent use.
func (s *Store) ExpireUploads(ctx context.Context) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	now := s.now()
	expired := func(u *upload) bool { return now.Sub(u.Last) >= s.opts.UploadTimeout }
	var ids []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		ups := tx.Bucket(bucketUploads)
		return ups.ForEachBucket(func(k []byte) error {
			u, err := readUpload(ups.Bucket(k))
			if err != nil {
				return fmt.Errorf("upload %q: %w", k, err)
			}
			if expired(u) {
				ids = append(ids, string(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, dbErr(err)
	}
	n := 0
	for _, id := range ids {
		if !s.uploads.tryLock(id) {
			continue
		}
		deleted := false
		_, err := s.update(ctx, func(w *wtx) error {
			ups := w.tx.Bucket(bucketUploads)
			ub := ups.Bucket([]byte(id))
			if ub == nil {
				return nil
			}
			u, err := readUpload(ub)
			if err != nil || !expired(u) {
				return err
			}
			deleted = true
			return ups.DeleteBucket([]byte(id))
		})
		s.uploads.unlock(id)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// janitor expires idle uploads until the store is closed.
func (s *Store) janitor() {
	defer s.wg.Done()
	every := min(max(s.opts.UploadTimeout/4, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		n, err := s.ExpireUploads(context.Background())
		switch {
		case err != nil && !errors.Is(err, store.ErrClosed):
			s.log.Error("bolt: expiring uploads", "err", err)
		case n > 0:
			s.log.Info("bolt: expired idle uploads", "count", n)
		}
	}
}

// uploadLocks serializes the chunks of each upload.
type uploadLocks struct {
	mu   sync.Mutex
	busy map[string]chan struct{} // closed when the holder unlocks
}

func (l *uploadLocks) lock(ctx context.Context, id string) error {
	for {
		l.mu.Lock()
		ch, held := l.busy[id]
		if !held {
			l.busy[id] = make(chan struct{})
			l.mu.Unlock()
			return nil
		}
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (l *uploadLocks) tryLock(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.busy[id]; held {
		return false
	}
	l.busy[id] = make(chan struct{})
	return true
}

func (l *uploadLocks) unlock(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.busy[id])
	delete(l.busy, id)
}
