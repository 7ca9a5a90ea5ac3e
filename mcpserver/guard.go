package mcpserver

import (
	"context"
	"fmt"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"sync"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

// guard is the store as one tool call may use it, and the only way tool
// code reaches the store (TestStoreOnlyThroughGuard fails the build's
// tests on any other use of Server.st). Before each operation it:
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
// A guard is safe for concurrent use by one call's goroutines (search reads
// files in parallel): admit serializes the call's bookkeeping.
type guard struct {
	s  *Server
	c  *call
	mu sync.Mutex // guards the call's bookkeeping in admit
}

// admit runs the checks above for an operation touching paths with access
// and carrying n content bytes.
func (g *guard) admit(access grant.Access, n int, paths ...string) error {
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
	if g.s.opts.Audit != nil {
		if err := g.s.opts.Audit.Err(); err != nil {
			return &auditError{err: err}
		}
	}
	if n > 0 {
		if ok, wait := g.s.limiter.Bytes(g.c.key, g.s.opts.Now(), n); !ok {
			return &rateError{what: "bytes", retry: ratelimit.RetryAfter(wait), limits: g.s.limiter.Limits(), n: n}
		}
	}
	return nil
}

// Put is store.Store.Put for a caller allowed to write req.Path.
func (g *guard) Put(ctx context.Context, req store.PutRequest) (store.PutResult, error) {
	if err := g.admit(grant.Write, len(req.Data), req.Path); err != nil {
		return store.PutResult{}, err
	}
	res, err := g.s.st.Put(ctx, req)
	if err == nil {
		g.c.committed = true
	}
	return res, err
}

// PutChunk is store.Store.PutChunk for a caller allowed to write the
// upload's path.
func (g *guard) PutChunk(ctx context.Context, ch store.Chunk) (store.UploadProgress, error) {
	if err := g.admit(grant.Write, len(ch.Data), ch.File.Path); err != nil {
		return store.UploadProgress{}, err
	}
	p, err := g.s.st.PutChunk(ctx, ch)
	if err == nil {
		g.c.committed = true
	}
	return p, err
}

// Declare is store.Store.Declare for a caller allowed to write every
// declared path.
func (g *guard) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	paths := make([]string, len(req.Entries))
	for i, d := range req.Entries {
		paths[i] = d.Path
	}
	if err := g.admit(grant.Write, 0, paths...); err != nil {
		return store.DeclareResult{}, err
	}
	res, err := g.s.st.Declare(ctx, req)
	if err == nil {
		g.c.committed = true
	}
	return res, err
}

// Remove is store.Store.Remove for a caller allowed to write req.Path.
func (g *guard) Remove(ctx context.Context, req store.RemoveRequest) error {
	if err := g.admit(grant.Write, 0, req.Path); err != nil {
		return err
	}
	err := g.s.st.Remove(ctx, req)
	if err == nil {
		g.c.committed = true
	}
	return err
}

// Copy is store.Store.Copy for a caller allowed to read req.From and write
// req.To.
func (g *guard) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	if err := g.admit(grant.Read, 0, req.From); err != nil {
		return store.CopyResult{}, err
	}
	if err := g.admit(grant.Write, 0, req.To); err != nil {
		return store.CopyResult{}, err
	}
	res, err := g.s.st.Copy(ctx, req)
	if err == nil {
		g.c.committed = true
	}
	return res, err
}

// Move is store.Store.Move for a caller allowed to read and write
// req.From (it disappears there) and write req.To.
func (g *guard) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	if err := g.admit(grant.ReadWrite, 0, req.From); err != nil {
		return store.CopyResult{}, err
	}
	if err := g.admit(grant.Write, 0, req.To); err != nil {
		return store.CopyResult{}, err
	}
	res, err := g.s.st.Move(ctx, req)
	if err == nil {
		g.c.committed = true
	}
	return res, err
}

// Stat is store.Store.Stat for a caller allowed to read p.
func (g *guard) Stat(ctx context.Context, p string) (store.Entry, error) {
	if err := g.admit(grant.Read, 0, p); err != nil {
		return store.Entry{}, err
	}
	return g.s.st.Stat(ctx, p)
}

// Open is store.Store.Open for a caller allowed to read p.
func (g *guard) Open(ctx context.Context, p string) (store.Content, error) {
	if err := g.admit(grant.Read, 0, p); err != nil {
		return nil, err
	}
	return g.s.st.Open(ctx, p)
}

// ReadDir is store.Store.ReadDir for a caller allowed to read dir. Children
// the caller may not read (below a --deny prefix) are left out, as if they
// did not exist; they are not denials of this call.
func (g *guard) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if err := g.admit(grant.Read, 0, dir); err != nil {
		return nil, err
	}
	entries, err := g.s.st.ReadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if _, err := g.c.perms.Check(g.c.def.name, g.c.def.group, e.Path, grant.Read); err == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// Revision is store.Store.Revision; it names no path, but the call's path
// arguments are still checked first.
func (g *guard) Revision(ctx context.Context) (uint64, error) {
	if err := g.admit(grant.Read, 0); err != nil {
		return 0, err
	}
	return g.s.st.Revision(ctx)
}

// Stats is store.Store.Stats; it names no path, but the call's path
// arguments are still checked first.
func (g *guard) Stats(ctx context.Context) (store.Stats, error) {
	if err := g.admit(grant.Read, 0); err != nil {
		return store.Stats{}, err
	}
	return g.s.st.Stats(ctx)
}

// resourceView is the store as one caller's resource requests see it
// (resources/list, resources/read, resource subscriptions): only files the
// caller may read through some tool of its grants, within the server's
// policy. Listings leave other files out; directories stay, so a walk can
// reach readable files below them, but they are never listed themselves.
type resourceView struct {
	s     *Server
	perms policy.Set
}

// resources returns the resource view of the caller in ctx.
func (s *Server) resources(ctx context.Context) resourceView {
	who, _ := identity.FromContext(ctx)
	return resourceView{s: s, perms: s.opts.Policy.For(who)}
}

// readable reports whether the caller may read the clean path p.
func (v resourceView) readable(p string) bool { return v.perms.AnyTool(p, grant.Read) }

// denied is the error of a resource request for a path the caller may not
// read.
func (v resourceView) denied(p string) error {
	return &policy.Denied{Tool: "resources", Path: p, Access: grant.Read,
		Rule: fmt.Sprintf("no grant allows reading %s; grants: %s", p, v.perms)}
}

// Open is store.Store.Open for a file the caller may read.
func (v resourceView) Open(ctx context.Context, p string) (store.Content, error) {
	if !v.readable(p) {
		return nil, v.denied(p)
	}
	return v.s.st.Open(ctx, p)
}

// ReadDir is store.Store.ReadDir without the files the caller may not
// read.
func (v resourceView) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	entries, err := v.s.st.ReadDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	out := entries[:0]
	for _, e := range entries {
		if e.IsDir() || v.readable(e.Path) {
			out = append(out, e)
		}
	}
	return out, nil
}

// watchAll returns the Server's own watch of every change from now on, for
// resource notifications; subscriptions were checked when they were made.
func (s *Server) watchAll(ctx context.Context) (<-chan store.Event, error) {
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

// rateError refuses a call over the caller's rate limit.
type rateError struct {
	what   string // "calls" or "bytes"
	retry  int    // seconds
	n      int    // bytes asked for
	limits ratelimit.Limits
}

func (e *rateError) Error() string {
	if e.what == "calls" {
		return fmt.Sprintf("rate limit: more than %g calls per second (bursts of %d) from this identity; retry after %d s", e.limits.Calls, e.limits.CallBurst, e.retry)
	}
	return fmt.Sprintf("rate limit: %d content bytes exceed this identity's %g bytes per second (bursts of %d); retry after %d s", e.n, e.limits.Bytes, e.limits.ByteBurst, e.retry)
}
