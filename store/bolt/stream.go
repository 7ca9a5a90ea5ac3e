package bolt

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

var _ store.Streamer = (*Store)(nil)

// PutStream stores the bytes of r at req.Path (see store.Streamer). The
// bytes go straight into blob chunks, in transactions of about 16 MiB, as
// they arrive; a last transaction makes them the file, as Put does. So
// memory stays bounded whatever the size, and with req.SHA256 declared
// every byte is written once: the chunks are written under the declared
// hash and checked at the end. Without it they are written under a random
// key and copied under their hash at the end. Content the store already
// has is only hashed, never written again.
//
// Until the last transaction the chunks carry an orphan mark, so a crash
// leaves nothing behind (the next Open sweeps them), and a failure deletes
// them at once. It is safe for concurrent use; concurrent streams that
// declare the same hash take turns.
func (s *Store) PutStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64) (store.PutResult, error) {
	if err := s.checkStream(req, size); err != nil {
		return store.PutResult{}, err
	}
	in, err := s.streamIn(ctx, r, size, req.SHA256)
	if err != nil {
		return store.PutResult{}, pathErr("put", req.Path, err)
	}
	defer s.unpin(in.h)
	return rules.One(s.putFiles(ctx, []streamFile{{req: req, in: in}}))
}

// PutStreams stores the files next yields in one atomic change (see
// store.Streamer), in one last transaction, as PutBatch does. A small
// file (up to one chunk, while the files held stay within maxHeld) is
// read into memory and written by that transaction; a larger one is
// streamed into blob chunks first, as PutStream streams it. So a tree of
// small files costs one commit and one fsync, not three per file. It is
// safe for concurrent use.
func (s *Store) PutStreams(ctx context.Context, next func() (store.PutRequest, io.Reader, error)) ([]store.PutResult, error) {
	var files []streamFile
	defer func() {
		for _, f := range files {
			if f.in != nil {
				s.unpin(f.in.h)
			}
		}
	}()
	held := 0
	for {
		req, r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		fail := func(err error) ([]store.PutResult, error) {
			return nil, &store.BatchError{Index: len(files), Path: req.Path, Err: err}
		}
		if err := s.checkStream(req, -1); err != nil {
			return fail(err)
		}
		limit := min(s.opts.ChunkSize, maxHeld-held)
		data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
		if err != nil {
			return fail(pathErr("put", req.Path, fmt.Errorf("reading the content: %w", err)))
		}
		f := streamFile{req: req}
		if len(data) <= limit {
			req.Data, f.data = data, data
			if f.sum, err = s.limits().Put(req); err != nil {
				return fail(err)
			}
			held += len(data)
		} else if f.in, err = s.streamIn(ctx, io.MultiReader(bytes.NewReader(data), r), -1, req.SHA256); err != nil {
			return fail(pathErr("put", req.Path, err))
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, s.check(ctx)
	}
	return s.putFiles(ctx, files)
}

// putFiles writes files in one transaction, each as Put would; a refused
// one fails the whole with a *store.BatchError naming it.
func (s *Store) putFiles(ctx context.Context, files []streamFile) ([]store.PutResult, error) {
	res := make([]store.PutResult, len(files))
	failed := 0
	var ran func() func(error)
	if h := store.CommitHookOf(ctx); h != nil {
		ran = func() func(error) {
			r := slices.Clone(res)
			rules.Superseded(r)
			return h(r)
		}
	}
	err := s.updateHooked(ctx, func(w *wtx) error {
		for i, f := range files {
			var err error
			if f.in != nil {
				res[i], err = w.putFile(f.req, f.in.sum, f.in.size, staged)
			} else {
				res[i], err = w.putFile(f.req, f.sum, int64(len(f.data)), func(h hash) error { return w.writeData(h, f.data) })
			}
			if err != nil {
				failed = i
				return err
			}
		}
		return nil
	}, ran)
	if err != nil {
		p := files[failed].req.Path
		return nil, &store.BatchError{Index: failed, Path: p, Err: pathErr("put", p, err)}
	}
	rules.Superseded(res)
	return res, nil
}

// maxHeld bounds the bytes of small files PutStreams holds in memory to
// write in its last transaction; later files are streamed into chunks.
const maxHeld = 32 << 20

// streamFile is one file of a write: its content held in memory (data,
// whose hash is sum), or staged in chunks (in).
type streamFile struct {
	req  store.PutRequest
	data []byte
	sum  string
	in   *streamed
}

// staged is putFile's write for content streamIn staged: its blob record
// exists, so putFile never calls it.
func staged(h hash) error {
	return fmt.Errorf("corrupt store: staged content %x has no blob record", h)
}

// checkStream validates a streamed write's path and announced size.
func (s *Store) checkStream(req store.PutRequest, size int64) error {
	if err := check.FilePath("put", req.Path); err != nil {
		return err
	}
	if size >= 0 {
		if err := s.limits().Size(size); err != nil {
			return pathErr("put", req.Path, err)
		}
	}
	if req.SHA256 != "" {
		if _, err := parseHash(req.SHA256); err != nil {
			return pathErr("put", req.Path, fmt.Errorf("%w: %w", store.ErrUpload, err))
		}
	}
	return nil
}

// streamed is content streamIn staged: its hash and size; its blob h,
// which has a record (with no references yet, marked orphan), stays pinned
// until unpinned (an unreferenced one is then swept).
type streamed struct {
	sum  string
	size int64
	h    hash
}

// streamIn reads r into the chunks of the blob of its content and returns
// it pinned, with a blob record. With declared set, the chunks are
// written under that hash (other streams declaring it wait) and checked
// at the end; else under a random key, copied under their hash once it is
// known. Only content checked against its hash ever gets a blob record,
// and a stream never writes the chunks of a blob that has one.
func (s *Store) streamIn(ctx context.Context, r io.Reader, size int64, declared string) (*streamed, error) {
	var key hash
	if declared != "" {
		h, err := s.sealer.blobKey(declared)
		if err != nil {
			return nil, err
		}
		key = h
		if err := s.uploads.Lock(ctx, streamLock(declared)); err != nil {
			return nil, err
		}
		defer s.uploads.Unlock(streamLock(declared))
	} else {
		rand.Read(key[:])
	}
	exists, err := s.pinBlob(key)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok || declared == "" {
			s.unpin(key) // sweeps what is left staged under key
		}
	}()
	sum, n, count, err := s.readChunks(ctx, r, size, key, !exists)
	if err != nil {
		return nil, err
	}
	if declared != "" {
		if sum != declared {
			return nil, fmt.Errorf("%w: declared %s, content has %s", store.ErrHashMismatch, declared, sum)
		}
		if err := s.recordStaged(ctx, key, n); err != nil {
			return nil, err
		}
		ok = true
		return &streamed{sum: sum, size: n, h: key}, nil
	}
	h, err := s.copyStaged(ctx, key, sum, n, count)
	if err != nil {
		return nil, err
	}
	ok = true
	return &streamed{sum: sum, size: n, h: h}, nil
}

// streamLock names the lock of the streams that write the chunks of sum.
func streamLock(sum string) string { return "\x00stream:" + sum }

// readChunks reads r to its end, hashing it and, while write holds and no
// record of blob key appears, staging it as the chunks of key in
// transactions of about batchBytes. It returns the hash, the size and the
// number of chunks.
//
// A transaction commits while the next batch is read (see stager). A
// sealed store seals each chunk as it is read, into a buffer the
// transaction keeps, and reads the next into the same buffer; a clear
// one reads each chunk into a buffer of its own.
func (s *Store) readChunks(ctx context.Context, r io.Reader, size int64, key hash, write bool) (string, int64, int64, error) {
	d := sha256.New()
	var n, next int64
	st := s.newStager(key, s.opts.ChunkSize)
	// On an early return the transaction in flight is waited for, so no
	// goroutine outlives the call; the error returned is the first one.
	defer st.wait()
	read := make([]byte, s.opts.ChunkSize)
	for done := false; !done; {
		var chunks [][]byte // one transaction's worth, as stored
		for batch := 0; batch < s.opts.batchBytes && !done; {
			buf := read
			if write && s.sealer.key == nil {
				// The transaction keeps the chunk until it commits.
				buf = st.bufs.get()
			}
			m, err := fill(r, buf)
			switch {
			case errors.Is(err, io.EOF):
				done = true
			case err != nil:
				return "", 0, 0, fmt.Errorf("reading the content: %w", err)
			}
			if m == 0 {
				break
			}
			d.Write(buf[:m])
			n += int64(m)
			if err := s.limits().Size(n); err != nil {
				return "", 0, 0, err
			}
			if size >= 0 && n > size {
				return "", 0, 0, fmt.Errorf("%w: more than the %d bytes announced", store.ErrUpload, size)
			}
			if write {
				c := buf[:m]
				if s.sealer.key != nil {
					c = s.sealer.sealBlob(st.bufs.get(), key, next+int64(len(chunks)), c)
				}
				chunks = append(chunks, c)
			}
			batch += m
		}
		if err := st.wait(); err != nil {
			return "", 0, 0, err
		}
		write = write && !st.appeared
		if len(chunks) == 0 || !write {
			continue
		}
		st.start(ctx, next, chunks)
		next += int64(len(chunks))
	}
	if err := st.wait(); err != nil {
		return "", 0, 0, err
	}
	if size >= 0 && n != size {
		return "", 0, 0, fmt.Errorf("%w: %d bytes arrived, %d were announced", store.ErrUpload, n, size)
	}
	return hex.EncodeToString(d.Sum(nil)), n, next, nil
}

// recordStaged gives blob h, whose size bytes are staged, a record with no
// references (and the orphan mark), unless it has one: from then on no
// stream writes its chunks, and the file that takes the first reference
// clears the mark.
func (s *Store) recordStaged(ctx context.Context, h hash, size int64) error {
	return s.update(ctx, func(w *wtx) error {
		_, ok, err := getBlob(w.blobs, h)
		if ok || err != nil {
			return err
		}
		if err := w.orphan.Put(h[:], []byte{1}); err != nil {
			return err
		}
		return w.blobs.Put(h[:], blobRecord{Size: size, ChunkSize: w.chunkSize}.encode())
	})
}

// copyStaged copies the count chunks staged under the random key, whose
// content is sum (size bytes), under sum, in bounded transactions, unless
// the store has that content; it returns the blob's hash, pinned and with
// a record. Each transaction commits while the next batch is read (and,
// in a sealed store, opened and sealed again for its new place).
func (s *Store) copyStaged(ctx context.Context, key hash, sum string, size, count int64) (hash, error) {
	h, err := s.sealer.blobKey(sum)
	if err != nil {
		return h, err
	}
	if err := s.uploads.Lock(ctx, streamLock(sum)); err != nil {
		return h, err
	}
	defer s.uploads.Unlock(streamLock(sum))
	exists, err := s.pinBlob(h)
	if err != nil {
		return h, err
	}
	if !exists {
		err = s.copyChunks(ctx, key, h, count)
	}
	if err == nil {
		err = s.recordStaged(ctx, h, size)
	}
	if err != nil {
		s.unpin(h)
		return h, err
	}
	return h, nil
}

// copyChunks copies the count chunks of blob from to blob to, which is
// pinned, unless to gets a record meanwhile.
func (s *Store) copyChunks(ctx context.Context, from, to hash, count int64) error {
	st := s.newStager(to, s.opts.ChunkSize)
	defer st.wait()
	per := int64(max(1, s.opts.batchBytes/s.opts.ChunkSize))
	var plain []byte // a sealed chunk opened, sealed again at once
	for i := int64(0); i < count; i += per {
		chunks := make([][]byte, 0, per)
		err := s.db.View(func(tx *bbolt.Tx) error {
			b := tx.Bucket(bucketChunks)
			for j := i; j < min(i+per, count); j++ {
				k := chunkKey(from, j)
				v, ok := lookup(b, k)
				if !ok {
					return fmt.Errorf("staged chunk %d is missing", j)
				}
				if s.sealer.key == nil {
					// v lives in the file's map, valid only in this
					// read transaction.
					chunks = append(chunks, append(st.bufs.get()[:0], v...))
					continue
				}
				p, _, err := s.sealer.openAny(plain, adBlob, k, v)
				if err != nil {
					return err
				}
				plain = p
				chunks = append(chunks, s.sealer.sealBlob(st.bufs.get(), to, j, p))
			}
			return nil
		})
		if err != nil {
			return dbErr(err)
		}
		if err := st.wait(); err != nil {
			return dbErr(err)
		}
		if st.appeared {
			return nil
		}
		st.start(ctx, i, chunks)
	}
	return dbErr(st.wait())
}

// pinBlob pins h, as an open Content does, and reports whether the store
// has it.
func (s *Store) pinBlob(h hash) (bool, error) {
	exists := false
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	err := s.db.View(func(tx *bbolt.Tx) error {
		_, ok, err := getBlob(tx.Bucket(bucketBlobs), h)
		exists = ok
		return err
	})
	if err != nil {
		return false, dbErr(err)
	}
	s.pinLocked(h)
	return exists, nil
}

// fill reads from r until buf is full or r ends. Unlike io.ReadFull it
// returns io.EOF for any end, and r's own errors, io.ErrUnexpectedEOF (a
// request body cut short) included, as they are.
func fill(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
