package tool

import (
	"context"
	"fmt"
	"io"

	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

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
		if ok, wait := rt.limiter.Bytes(c.key, rt.env.Now(), int(n)); !ok {
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
