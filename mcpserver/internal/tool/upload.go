package tool

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

// ErrNoStream reports a raw upload to a store that cannot take a stream
// (it does not implement store.Streamer) without the size and sha256 that
// a chunked upload needs.
var ErrNoStream = errors.New("this depot's store takes a raw upload only with its size and sha256 declared")

// PutStream is store.Streamer.PutStream for a caller allowed to write
// req.Path. The bytes count against the caller's byte rate and, until
// committed, with the chunks of uploads in progress against the store's
// size limit: all size of them at once when size is known (refused before
// a byte is read), else as they are read (refused as soon as a limit is
// crossed; nothing is stored). A store that is not a store.Streamer gets
// the bytes as a chunked upload of upload id req's path and hash, which
// needs size and req.SHA256.
func (g *Store) PutStream(ctx context.Context, req store.PutRequest, r io.Reader, size int64) (store.PutResult, error) {
	if err := g.admit(grant.Write, int(max(size, 0)), req.Path); err != nil {
		return store.PutResult{}, err
	}
	in, err := g.newIntake(ctx, size)
	if err != nil {
		return store.PutResult{}, err
	}
	defer in.done()
	if size < 0 {
		r = in.reader(r)
	}
	var res store.PutResult
	if st, ok := g.rt.st.(store.Streamer); ok {
		res, err = st.PutStream(ctx, req, r, size)
	} else {
		res, err = g.putChunked(ctx, req, r, size)
	}
	g.shownEvictions(&res.Evicted)
	return res, in.outcome(g.wrote(ctx, err))
}

// PutStreams is store.Streamer.PutStreams for a caller allowed to write
// below dir and at every file next yields (each is checked before its
// bytes are read). size is what the files hold in all, known in advance
// (an archive's declared sizes): it counts against the caller's byte rate
// and, until committed, against the store's size limit, before anything
// is read. It needs a store that is a store.Streamer.
func (g *Store) PutStreams(ctx context.Context, dir string, size int64, next func() (store.PutRequest, io.Reader, error)) ([]store.PutResult, error) {
	if err := g.admit(grant.Write, int(max(size, 0)), dir); err != nil {
		return nil, err
	}
	st, ok := g.rt.st.(store.Streamer)
	if !ok {
		return nil, ErrNoArchive
	}
	in, err := g.newIntake(ctx, max(size, 0))
	if err != nil {
		return nil, err
	}
	defer in.done()
	res, err := st.PutStreams(ctx, func() (store.PutRequest, io.Reader, error) {
		req, r, err := next()
		if err == nil {
			err = g.admit(grant.Write, 0, req.Path) // the store reads nothing after an error
		}
		return req, r, err
	})
	for i := range res {
		g.shownEvictions(&res[i].Evicted)
	}
	return res, g.wrote(ctx, err)
}

// ErrNoArchive reports an archive upload to a store that cannot take
// streams (it does not implement store.Streamer).
var ErrNoArchive = errors.New("this depot's store cannot unpack archives; send the files with guide_cache_files")

// putChunked sends r to a store without streams as a chunked upload.
func (g *Store) putChunked(ctx context.Context, req store.PutRequest, r io.Reader, size int64) (store.PutResult, error) {
	if size < 0 || req.SHA256 == "" {
		return store.PutResult{}, ErrNoStream
	}
	part := max(g.rt.env.MaxContentBytes, 1)
	count := int(max((size+part-1)/part, 1))
	id := "raw:" + req.SHA256 + ":" + req.Path
	buf := make([]byte, part)
	for i := range count {
		n, err := io.ReadFull(r, buf[:min(part, size-int64(i)*part)])
		if err != nil {
			return store.PutResult{}, fmt.Errorf("%w: reading chunk %d: %w", store.ErrUpload, i, err)
		}
		p, err := g.rt.st.PutChunk(ctx, store.Chunk{UploadID: id, Index: i, Count: count, Data: buf[:n], TotalSize: size, File: req})
		if err != nil {
			return store.PutResult{}, err
		}
		if p.Complete {
			return p.Result, nil
		}
	}
	return store.PutResult{}, fmt.Errorf("%w: the upload did not complete", store.ErrUpload)
}

// CheckWrite refuses, before anything is sent, a write to p the caller may
// not make: the check PutStream will make again when the bytes arrive.
func (g *Store) CheckWrite(p string) error { return g.admit(grant.Write, 0, p) }

// Refusal is a failure a tool body describes itself, with its type, its
// message and what the agent should do, for failures no sentinel error
// covers (an expired upload token). It is a plain value.
type Refusal struct {
	Type        ErrorType
	Message     string
	Instruction string
	// Deny records the call in the audit log as decision deny, as a
	// refusal on security grounds (a guessed or another identity's upload
	// URL) rather than a failed call; Audit, when set, is the record's
	// reason instead of Message, for what the operator may see and the
	// caller may not (whose URL it was).
	Deny  bool
	Audit string
}

func (r *Refusal) Error() string { return r.Message }

type baseKey struct{}

// WithBaseURL returns ctx carrying the base URL ("https://host:port") at
// which the request that ctx belongs to reached the server, so a tool can
// hand out URLs on the same listener.
func WithBaseURL(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

// BaseURL returns the base URL WithBaseURL put in ctx, or "" for a request
// that did not come over HTTP.
func BaseURL(ctx context.Context) string {
	b, _ := ctx.Value(baseKey{}).(string)
	return b
}

// diskCheckEvery is how many bytes a stream of unknown size reads between
// two checks of the disk's free space.
const diskCheckEvery = 16 << 20

// intake is the account of one raw upload's bytes between their arrival
// and their commit. Until committed they are staged in the store, where
// they take disk like the chunks of uploads in progress, so they count
// with those against the store's size limit: Runtime.streaming sums the
// bytes of every stream in flight. Bytes whose number was not known in
// advance (a body without Content-Length) are charged to the caller's
// byte rate as they are read. An intake belongs to one stream.
type intake struct {
	g       *Store
	room    int64 // what uploads in progress and streams may hold together; -1: no limit
	held    int64 // this stream's bytes counted in Runtime.streaming
	perRead bool  // charge the byte rate and check the disk as bytes are read
	checked int64 // held when the disk was last checked
	err     error // why the stream was refused while it was read
}

// newIntake opens the account of a stream of size bytes, counting them at
// once, or (size < 0) as they are read; done must be called once it
// ends, committed or not.
func (g *Store) newIntake(ctx context.Context, size int64) (*intake, error) {
	in := &intake{g: g, room: -1, perRead: size < 0}
	st, err := g.rt.st.Stats(ctx)
	if err != nil {
		return nil, err
	}
	if st.MaxStoreBytes > 0 {
		in.room = st.MaxStoreBytes - st.UploadBytes
	}
	if err := in.take(size); err != nil {
		in.done()
		return nil, err
	}
	return in, nil
}

// Room returns how many content bytes one more upload may stage now: the
// store's size limit less the chunks of uploads in progress and the other
// streams in flight; -1 when the store has no size limit. A caller that
// reads an archive uses it to refuse one that unpacks to more before
// storing anything.
func (g *Store) Room(ctx context.Context) (int64, error) {
	in, err := g.newIntake(ctx, 0)
	if err != nil || in.room < 0 {
		return -1, err
	}
	return max(in.room-g.rt.streaming.Load(), 0), nil
}

// Receiving returns the bytes of raw uploads being received and not yet
// committed or dropped, which count against the store's size limit with
// the chunks of uploads in progress.
func (g *Store) Receiving() int64 { return g.rt.streaming.Load() }

// take counts n more bytes of the stream.
func (in *intake) take(n int64) error {
	if n <= 0 {
		return nil
	}
	rt := in.g.rt
	total := rt.streaming.Add(n)
	in.held += n
	if in.room >= 0 && total > in.room {
		return fmt.Errorf("%w: the uploads in progress and the raw uploads being received would hold %d bytes, more than the %d the store's size limit leaves them",
			store.ErrLimit, total, in.room)
	}
	if !in.perRead {
		return nil
	}
	c := in.g.c
	if c.rateLimited() {
		if ok, wait := rt.limiter.Bytes(c.tenant, rt.env.Now(), int(n)); !ok {
			return &RateError{what: "bytes", Retry: ratelimit.RetryAfter(wait), limits: rt.limiter.Limits(), n: int(n)}
		}
	}
	if in.held-in.checked >= diskCheckEvery {
		in.checked = in.held
		return in.g.checkDisk(diskCheckEvery)
	}
	return nil
}

// done ends the account: the stream's bytes are committed (and counted as
// stored content) or dropped.
func (in *intake) done() { in.g.rt.streaming.Add(-in.held) }

// reader returns r with every byte read counted by take; a refusal ends
// the stream with its error, kept in in.err.
func (in *intake) reader(r io.Reader) io.Reader { return &intakeReader{r: r, in: in} }

// outcome returns the error of a stream that failed with err: the reason
// the intake refused it, when it did, rather than how the store reported
// the reader's failure.
func (in *intake) outcome(err error) error {
	if err != nil && in.err != nil {
		return in.err
	}
	return err
}

type intakeReader struct {
	r  io.Reader
	in *intake
}

func (r *intakeReader) Read(p []byte) (int, error) {
	if r.in.err != nil {
		return 0, r.in.err
	}
	n, err := r.r.Read(p)
	if terr := r.in.take(int64(n)); terr != nil {
		r.in.err = terr
		return 0, terr
	}
	return n, err
}

var _ io.Reader = (*intakeReader)(nil)
