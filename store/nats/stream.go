package nats

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/nats-io/nuid"
)

var _ store.Streamer = (*Store)(nil)

// streamed is a file read from a reader: its hash and size, and either
// its bytes (small enough to store inline) or the generation of the
// chunks it was written to.
type streamed struct {
	sum   string
	size  int64
	gen   string // "" when not written as chunks
	small []byte
}

// maxHeldInline bounds the bytes of small files PutStreams holds in memory
// for inline storage; later small files are written as chunks.
const maxHeldInline = 32 << 20

// readStream reads r to its end, hashing it and writing it as chunks as
// it arrives (unless it stays within inline, then it is kept), and checks
// the announced size, the limits and the declared hash. On failure
// nothing it wrote is left.
func (s *Store) readStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64, inline int64) (streamed, error) {
	if size >= 0 {
		if err := s.limits().Size(size); err != nil {
			return streamed{}, err
		}
	}
	gen := streamGen + nuid.Next()
	var w *chunkWriter
	d := sha256.New()
	var small []byte
	var total int64
	buf := make([]byte, 256<<10)
	fail := func(err error) (streamed, error) {
		if w != nil {
			w.abort()
			if derr := s.chunks.drop(context.WithoutCancel(ctx), "", gen); derr != nil {
				s.log.Warn("nats: deleting the chunks of a refused stream", "err", derr)
			}
		}
		return streamed{}, err
	}
	for {
		n, rerr := r.Read(buf)
		if n > 0 {
			total += int64(n)
			if size >= 0 && total > size {
				return fail(fmt.Errorf("%w: the stream holds more than the %d bytes announced", store.ErrUpload, size))
			}
			if err := s.limits().Size(total); err != nil {
				return fail(err)
			}
			d.Write(buf[:n])
			switch {
			case w == nil && total <= inline:
				small = append(small, buf[:n]...)
			default:
				if w == nil {
					w = s.chunks.writer(ctx, s.chunkSize, func(i int) string { return s.chunks.blobSubject("", gen, int64(i)) })
					if err := w.write(small); err != nil {
						return fail(err)
					}
					small = nil
				}
				if err := w.write(buf[:n]); err != nil {
					return fail(err)
				}
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return fail(rerr)
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
	}
	if size >= 0 && total != size {
		return fail(fmt.Errorf("%w: the stream ended after %d of the %d bytes announced", store.ErrUpload, total, size))
	}
	sum := hex.EncodeToString(d.Sum(nil))
	if req.SHA256 != "" && req.SHA256 != sum {
		return fail(fmt.Errorf("%w: declared %s, content has %s", store.ErrHashMismatch, req.SHA256, sum))
	}
	out := streamed{sum: sum, size: total}
	if w == nil {
		if small == nil {
			small = []byte{}
		}
		out.small = small
		return out, nil
	}
	if err := w.close(); err != nil {
		return fail(err)
	}
	out.gen = gen
	return out, nil
}

// PutStream stores the bytes of r at req.Path, as Put would store them,
// writing them as chunks as they arrive: memory stays bounded whatever the
// size (see store.Streamer). It is safe for concurrent use.
func (s *Store) PutStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64) (store.PutResult, error) {
	if err := check.FilePath("put", req.Path); err != nil {
		return store.PutResult{}, err
	}
	f, err := s.readStream(ctx, req, r, size, s.opts.InlineBytes)
	if err != nil {
		return store.PutResult{}, check.PathError("put", req.Path, err)
	}
	return rules.One(s.putFiles(ctx, []store.PutRequest{req}, []streamed{f}, nil, uploadedOf(f)))
}

// uploadedOf is what a streamed file uploaded, for updateUploaded.
func uploadedOf(fs ...streamed) map[string]string {
	m := map[string]string{}
	for _, f := range fs {
		if f.gen != "" {
			if _, ok := m[f.sum]; !ok {
				m[f.sum] = f.gen
			}
		}
	}
	return m
}

// PutStreams stores the files next yields in one atomic batch, each read
// to its end and written as chunks before next is called again (see
// store.Streamer). It is safe for concurrent use.
func (s *Store) PutStreams(ctx context.Context, next func() (store.PutRequest, io.Reader, error)) ([]store.PutResult, error) {
	var reqs []store.PutRequest
	var files []streamed
	held := int64(0)
	drop := func() {
		for _, f := range files {
			if f.gen != "" {
				if err := s.chunks.drop(context.WithoutCancel(ctx), s.chunks.addr.id(f.sum), f.gen); err != nil {
					s.log.Warn("nats: deleting the chunks of a refused stream", "err", err)
				}
			}
		}
	}
	for {
		req, r, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			drop()
			return nil, err
		}
		i := len(reqs)
		if err := check.FilePath("put", req.Path); err != nil {
			drop()
			return nil, &store.BatchError{Index: i, Path: req.Path, Err: err}
		}
		inline := s.opts.InlineBytes
		if held >= maxHeldInline {
			inline = -1
		}
		f, err := s.readStream(ctx, req, r, -1, inline)
		if err != nil {
			drop()
			return nil, &store.BatchError{Index: i, Path: req.Path, Err: check.PathError("put", req.Path, err)}
		}
		held += int64(len(f.small))
		reqs, files = append(reqs, req), append(files, f)
	}
	if len(reqs) == 0 {
		return nil, s.check(ctx)
	}
	uploaded := uploadedOf(files...)
	res, err := s.putFiles(ctx, reqs, files, nil, uploaded)
	// Chunks of a content stored twice in the batch, under another
	// generation than the one kept, are garbage.
	for _, f := range files {
		if f.gen != "" && uploaded[f.sum] != f.gen {
			if derr := s.chunks.drop(context.WithoutCancel(ctx), s.chunks.addr.id(f.sum), f.gen); derr != nil {
				s.log.Warn("nats: deleting duplicate chunks", "err", derr)
			}
		}
	}
	return res, err
}
