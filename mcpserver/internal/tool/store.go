package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

// Store is the store as one tool call may use it, and the only way tool
// code reaches the store: the unguarded store.Store is an unexported field
// of Runtime, out of reach of every other package. Before each operation
// it:
//
//  1. checks every path argument the decoder produced (call.authorizeArgs),
//     so a path argument that is never written is still checked;
//  2. checks every path the operation touches, with the access the
//     operation needs (writes: grant.Write), so derived paths (the
//     /uploads/<hash>/<name> of a filename-only upload) and every entry of
//     a listing are checked whatever the decoder recorded;
//  3. refuses while the audit log is failing (the record of this call
//     could not be written);
//  4. takes the content's bytes from the caller's byte rate limit.
//
// Any refusal returns before the store is touched, so a denied call
// changes nothing. A new store operation for tools gets a guarded method
// here; there is deliberately no way around it.
//
// A Store is safe for concurrent use by one call's goroutines (search reads
// files in parallel): admit serializes the call's bookkeeping.
type Store struct {
	rt *Runtime
	c  *Call
	mu sync.Mutex // guards the call's bookkeeping in admit
}

// admit runs the checks above for an operation touching paths with access
// and carrying n content bytes.
func (g *Store) admit(access grant.Access, n int, paths ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.c.authorizeArgs(); err != nil {
		return err
	}
	for _, p := range paths {
		if err := g.c.authorize(p, access); err != nil {
			return err
		}
	}
	if g.rt.audit != nil {
		if err := g.rt.audit.Err(); err != nil {
			return &auditError{err: err}
		}
	}
	if access&grant.Write != 0 {
		if err := g.checkDisk(n); err != nil {
			return err
		}
	}
	if n > 0 && g.c.rateLimited() {
		if ok, wait := g.rt.limiter.Bytes(g.c.tenant, g.rt.env.Now(), n); !ok {
			return &RateError{what: "bytes", Retry: ratelimit.RetryAfter(wait), limits: g.rt.limiter.Limits(), n: n}
		}
	}
	return nil
}

// then runs op unless err, an admission's refusal, is set.
func then[T any](err error, op func() (T, error)) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return op()
}

// wrote notes that the store accepted the call's write, when err is nil,
// and returns err; a refusal for room or for a quota is returned as one
// that names only what the caller may read (see refusals.go).
func (g *Store) wrote(ctx context.Context, err error) error {
	if err == nil {
		g.c.committed = true
		return nil
	}
	if re, ok := errors.AsType[*store.RoomError](err); ok {
		return g.roomRefusal(err, re)
	}
	if qe, ok := errors.AsType[*store.QuotaError](err); ok {
		return g.quotaRefusal(ctx, err, qe)
	}
	return err
}

// Put is store.Store.Put for a caller allowed to write req.Path.
func (g *Store) Put(ctx context.Context, req store.PutRequest) (store.PutResult, error) {
	res, err := then(g.admit(grant.Write, len(req.Data), req.Path), func() (store.PutResult, error) { return g.rt.st.Put(g.recordAtCommit(ctx), req) })
	if err != nil && g.c.early != nil {
		g.c.Status = "" // the early record's; Finish amends it
	}
	g.shownEvictions(&res.Evicted)
	return res, g.wrote(ctx, err)
}

// recordAtCommit returns ctx with a commit hook that writes the call's
// audit record while its write commits, when the call declared
// RecordAtCommit and the audit log can (EarlyAuditor); otherwise ctx.
// While records of earlier calls are held for a failing log, the record
// is written after the write, behind them.
func (g *Store) recordAtCommit(ctx context.Context) context.Context {
	ea, ok := g.rt.audit.(EarlyAuditor)
	if !ok || !g.c.atCommit || g.c.early != nil || g.rt.held.any.Load() {
		return ctx
	}
	return store.WithCommitHook(ctx, func(res []store.PutResult) func(error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		c := g.c
		c.Status = res[0].Status.String()
		r := g.rt.callRecord(c, nil, nil, false, g.rt.env.Now())
		if err := ea.AppendEarly(r); err != nil {
			// Finish writes the record after the write, and deals with
			// the log's failure as it does for any call.
			c.Status = ""
			return nil
		}
		c.early = r
		// Settled at once for the whole group commit, so that one
		// checkpoint covers its records; a failed commit is settled by
		// Finish, which amends the record.
		return func(err error) {
			if err == nil {
				ea.Committed(r)
			}
		}
	})
}

// PutBatch is store.Store.PutBatch for a caller allowed to write every
// request's path; the content of all of them counts against the byte rate
// limit at once.
func (g *Store) PutBatch(ctx context.Context, reqs []store.PutRequest) ([]store.PutResult, error) {
	paths := make([]string, len(reqs))
	n := 0
	for i, r := range reqs {
		paths[i] = r.Path
		n += len(r.Data)
	}
	res, err := then(g.admit(grant.Write, n, paths...), func() ([]store.PutResult, error) { return g.rt.st.PutBatch(ctx, reqs) })
	for i := range res {
		g.shownEvictions(&res[i].Evicted)
	}
	return res, g.wrote(ctx, err)
}

// PutChunk is store.Store.PutChunk for a caller allowed to write the
// upload's path.
func (g *Store) PutChunk(ctx context.Context, ch store.Chunk) (store.UploadProgress, error) {
	err := g.admit(grant.Write, len(ch.Data), ch.File.Path)
	if err == nil {
		err = g.checkUploadBytes(ctx, int64(len(ch.Data)))
	}
	id := ch.UploadID
	ch.UploadID = g.storeUploadID(id)
	p, err := then(err, func() (store.UploadProgress, error) { return g.rt.st.PutChunk(ctx, ch) })
	p.UploadID = id
	g.shownEvictions(&p.Result.Evicted)
	return p, g.wrote(ctx, err)
}

// Declare is store.Store.Declare for a caller allowed to write every
// declared path.
func (g *Store) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	paths := make([]string, len(req.Entries))
	for i, d := range req.Entries {
		paths[i] = d.Path
	}
	res, err := then(g.admit(grant.Write, 0, paths...), func() (store.DeclareResult, error) { return g.rt.st.Declare(ctx, req) })
	return res, g.wrote(ctx, err)
}

// Remove is store.Store.Remove for a caller allowed to write req.Path.
func (g *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	if err := g.admit(grant.Write, 0, req.Path); err != nil {
		return err
	}
	return g.wrote(ctx, g.rt.st.Remove(ctx, req))
}

// Copy is store.Store.Copy for a caller allowed to read req.From and write
// req.To.
func (g *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	res, err := then(g.admitCopy(grant.Read, req.From, req.To), func() (store.CopyResult, error) { return g.rt.st.Copy(ctx, req) })
	return res, g.wrote(ctx, err)
}

// Move is store.Store.Move for a caller allowed to read and write
// req.From (it disappears there) and write req.To.
func (g *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	res, err := then(g.admitCopy(grant.ReadWrite, req.From, req.To), func() (store.CopyResult, error) { return g.rt.st.Move(ctx, req) })
	return res, g.wrote(ctx, err)
}

// admitCopy admits a copy or move from from, which needs access, to to.
func (g *Store) admitCopy(access grant.Access, from, to string) error {
	if err := g.admit(access, 0, from); err != nil {
		return err
	}
	return g.admit(grant.Write, 0, to)
}

// Stat is store.Store.Stat for a caller allowed to read p.
func (g *Store) Stat(ctx context.Context, p string) (store.Entry, error) {
	return then(g.admit(grant.Read, 0, p), func() (store.Entry, error) { return g.rt.st.Stat(ctx, p) })
}

// Open is store.Store.Open for a caller allowed to read p.
func (g *Store) Open(ctx context.Context, p string) (store.Content, error) {
	return then(g.admit(grant.Read, 0, p), func() (store.Content, error) { return g.rt.st.Open(ctx, p) })
}

// ReadDir is store.Store.ReadDir for a caller allowed to read dir. Children
// the caller may not read (below a --deny prefix) are left out, as if they
// did not exist; they are not denials of this call.
func (g *Store) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	entries, err := then(g.admit(grant.Read, 0, dir), func() ([]store.Entry, error) { return g.rt.st.ReadDir(ctx, dir) })
	return slices.DeleteFunc(entries, func(e store.Entry) bool { return !g.may(e.Path, grant.Read) }), err
}

// may reports whether the call's grants allow access to p, without noting
// p or denying the call.
func (g *Store) may(p string, access grant.Access) bool {
	_, err := g.c.perms.Check(g.c.def.name, g.c.def.group, p, access)
	return err == nil
}

// shownEvictions keeps, of the paths a write evicted, those the caller may
// read; the others are counted in Count without their names. A write that
// fills the store evicts other identities' files, and their names are not
// the writer's to learn.
func (g *Store) shownEvictions(ev *store.Evictions) {
	ev.Paths = slices.DeleteFunc(slices.Clone(ev.Paths), func(p string) bool { return !g.may(p, grant.Read) })
}

// Revision is store.Store.Revision; it names no path, but the call's path
// arguments are still checked first.
func (g *Store) Revision(ctx context.Context) (uint64, error) {
	return then(g.admit(grant.Read, 0), func() (uint64, error) { return g.rt.st.Revision(ctx) })
}

// Stats is store.Store.Stats; it names no path, but the call's path
// arguments are still checked first.
func (g *Store) Stats(ctx context.Context) (store.Stats, error) {
	return then(g.admit(grant.Read, 0), func() (store.Stats, error) { return g.rt.st.Stats(ctx) })
}

// View is the store as one caller's resource requests see it
// (resources/list, resources/read, resource subscriptions): only files the
// caller may read through some tool of its grants, within the server's
// policy. Listings leave other files out; directories stay, so a walk can
// reach readable files below them, but they are never listed themselves.
type View struct {
	rt    *Runtime
	perms policy.Set
}

// View returns the resource view of the caller in ctx.
func (s *Runtime) View(ctx context.Context) View {
	who, _ := identity.FromContext(ctx)
	return View{rt: s, perms: s.policy.For(who)}
}

// Perms returns the caller's permissions, for decisions made later on
// its behalf (a subscription's notifications).
func (v View) Perms() policy.Set { return v.perms }

// Readable reports whether the caller may read the clean path p.
func (v View) Readable(p string) bool { return v.perms.AnyTool(p, grant.Read) }

// Denied is the error of a resource request for a path the caller may not
// read.
func (v View) Denied(p string) error {
	return &policy.Denied{Tool: "resources", Path: p, Access: grant.Read,
		Rule: fmt.Sprintf("no grant allows reading %s; grants: %s", p, v.perms)}
}

// check refuses a resource request for p unless the caller may read it.
func (v View) check(p string) error {
	if !v.Readable(p) {
		return v.Denied(p)
	}
	return nil
}

// Open is store.Store.Open for a file the caller may read.
func (v View) Open(ctx context.Context, p string) (store.Content, error) {
	return then(v.check(p), func() (store.Content, error) { return v.rt.st.Open(ctx, p) })
}

// OpenAt is store.Store.OpenAt for a caller allowed to read p.
func (v View) OpenAt(ctx context.Context, p string, rev uint64) (store.Content, error) {
	return then(v.check(p), func() (store.Content, error) { return v.rt.st.OpenAt(ctx, p, rev) })
}

// ReadDir is store.Store.ReadDir without the files the caller may not
// read.
func (v View) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	entries, err := v.rt.st.ReadDir(ctx, dir)
	return slices.DeleteFunc(entries, func(e store.Entry) bool { return !e.IsDir() && !v.Readable(e.Path) }), err
}

// WatchAll returns the server's own watch of every change from now on, for
// resource notifications; subscriptions were checked when they were made.
func (s *Runtime) WatchAll(ctx context.Context) (<-chan store.Event, error) {
	rev, err := s.st.Revision(ctx)
	if err != nil {
		return nil, err
	}
	return s.st.Watch(ctx, depotpath.Root, rev)
}

// auditError refuses a call because the audit log cannot be written.
type auditError struct{ err error }

func (e *auditError) Error() string { return "audit log unavailable: " + e.err.Error() }
func (e *auditError) Unwrap() error { return e.err }

// RateError refuses a call over the caller's rate limit. Every reply
// contract maps it explicitly, with its retry hint.
type RateError struct {
	// Retry is the number of seconds to wait before repeating the call.
	Retry  int
	what   string // "calls" or "bytes"
	n      int    // bytes asked for
	limits ratelimit.Limits
}

func (e *RateError) Error() string {
	if e.what == "calls" {
		return fmt.Sprintf("rate limit: more than %g calls per second (bursts of %d) from your tenant (every credential with your grants); retry after %d s", e.limits.Calls, e.limits.CallBurst, e.Retry)
	}
	return fmt.Sprintf("rate limit: %d content bytes exceed your tenant's %g bytes per second (bursts of %d); retry after %d s", e.n, e.limits.Bytes, e.limits.ByteBurst, e.Retry)
}

// ErrorDiskFull: the disk under the database or the audit log is too full
// to take the write and keep its reserve; reads still work.
const ErrorDiskFull ErrorType = "disk_full"

// diskSlack is what any write needs beyond its content: the pages a
// bbolt commit touches and its audit record.
const diskSlack = 256 << 10

// DiskFullError refuses a write that would leave less than the reserve
// free: the reserve is kept so that the audit log and bbolt can still
// commit (reads and refusals are audited too), and so that a write is
// refused before it starts rather than failing half-way.
type DiskFullError struct {
	Free, Needed, Reserve int64
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk_full: the disk holding the depot has %d bytes free; this write needs %d bytes and %d are kept in reserve",
		e.Free, e.Needed, e.Reserve)
}

// checkDisk refuses a write of n content bytes when the disk would keep
// less than Env.DiskReserve free. An error reading the free space lets the
// write through: the store then reports what happens.
func (g *Store) checkDisk(n int) error {
	env := g.rt.env
	if env.DiskFree == nil || env.DiskReserve <= 0 {
		return nil
	}
	free, err := env.DiskFree()
	if err != nil {
		return nil
	}
	needed := int64(n) + diskSlack
	if free-needed < env.DiskReserve {
		return &DiskFullError{Free: free, Needed: needed, Reserve: env.DiskReserve}
	}
	return nil
}

// ErrStopWalk, returned by a walk's visitor, ends the walk without error.
var ErrStopWalk = errors.New("walk stopped")

// Changes reads the change feed for the caller (package feed): refused
// unless some grant lets it read at or below req.Prefix; each change is
// shown only if the caller may read its path.
func (g *Store) Changes(ctx context.Context, req feed.Request) (feed.Page, error) {
	if err := g.admit(grant.Read, 0); err != nil {
		return feed.Page{}, err
	}
	g.c.Note(req.Prefix)
	if err := feed.CheckPrefix(g.c.perms, g.c.def.name, req.Prefix); err != nil {
		return feed.Page{}, err
	}
	return feed.Read(ctx, g.rt.st, g.c.perms, req)
}

// Walk visits the entries below the directory dir in depth-first
// pre-order, siblings in name order (the order of Store.ReadDir). When
// recursive is set, it descends into each directory for which visit
// reports true. Each directory is listed in its own read transaction: a
// walk is not one snapshot, and entries changed meanwhile may be seen or
// missed. Errors from the store are wrapped in StoreError.
func (g *Store) Walk(ctx context.Context, dir string, recursive bool, visit func(e store.Entry) (descend bool, err error)) error {
	return g.Tree(Place{}).Walk(ctx, dir, recursive, visit)
}

// EntryTime is the modification time shown for e: its mtime, else its last
// change, else its creation (the root has none of them: the epoch).
func EntryTime(e store.Entry) time.Time {
	for _, t := range []time.Time{e.MTime, e.Updated, e.Created} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Unix(0, 0)
}
