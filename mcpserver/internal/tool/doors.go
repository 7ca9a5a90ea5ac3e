package tool

import (
	"context"
	"fmt"
	"mime"
	"path"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// Door is one request of an HTTP door onto the tree (WebDAV, a resource
// link): the store as the caller's resource view sees it (files some tool
// of its grants may read, within the server's policy), with the
// bookkeeping of one call named after the door, so the request is
// counted, audited and logged like a tool call (Finish).
//
// A door shows a path only if the caller may read it or something below
// it (policy.Set.Reaches): a token granted /a learns no name of /b, not
// even a directory's. Every other path is refused with a *policy.Denied,
// which the door answers as it answers a path that does not exist.
//
// Before each read it refuses while the audit log is failing, as the
// guarded store does: content is not handed out unaudited. A Door belongs
// to one request; it is not safe for concurrent use.
type Door struct {
	c *Call
	v View
}

// Door begins a request of the door name (also its group for the audit
// log) by the caller in ctx.
func (s *Runtime) Door(ctx context.Context, name string) *Door {
	c := s.NewCall(ctx, name, name)
	c.readOnly = true
	return &Door{c: c, v: s.View(ctx)}
}

// Call returns the request's call, for what the door learns (Path, Size,
// SHA256, Status).
func (d *Door) Call() *Call { return d.c }

// Finish ends the request's bookkeeping (Runtime.Finish): err is its
// failure, nil on success. It returns the audit log's error. A door only
// reads, so the record of a request the grants allowed is written at once
// and made durable shortly after the reply (Auditor.AppendDeferred); a
// refused one is durable before it.
func (d *Door) Finish(err error) error { return d.c.rt.Finish(d.c, err) }

// Key returns the caller's identity key (see Key), which binds the
// resource links handed to it.
func (d *Door) Key() string { return d.c.key }

// admit refuses p unless the caller may see it (file: read it; directory
// too: reach something readable below it), and while the audit log is
// failing. It notes p for the audit record.
func (d *Door) admit(p string, dir bool) error {
	d.c.Note(p)
	if err := d.audited(); err != nil {
		return err
	}
	if d.visible(p, dir) {
		return nil
	}
	return d.v.Denied(p)
}

// audited refuses while the audit log is failing.
func (d *Door) audited() error {
	if d.c.rt.audit != nil {
		if err := d.c.rt.audit.Err(); err != nil {
			return &auditError{err: err}
		}
	}
	return nil
}

// visible reports whether a listing may name p to the caller.
func (d *Door) visible(p string, dir bool) bool {
	if dir {
		return d.v.perms.Reaches(p, grant.Read)
	}
	return d.v.Readable(p)
}

// stat is a Stat or StatAt, checked: a directory needs only to lead to a
// readable path, a file to be readable.
func (d *Door) stat(ctx context.Context, p string, at func(context.Context, string) (store.Entry, error)) (store.Entry, error) {
	if err := d.admit(p, true); err != nil {
		return store.Entry{}, err
	}
	e, err := at(ctx, p)
	if err == nil && !e.IsDir() && !d.visible(p, false) {
		return store.Entry{}, d.v.Denied(p)
	}
	return e, err
}

// Stat is store.Store.Stat for a path the caller may see.
func (d *Door) Stat(ctx context.Context, p string) (store.Entry, error) {
	return d.stat(ctx, p, d.c.rt.st.Stat)
}

// StatAt is store.Store.StatAt for a path the caller may see.
func (d *Door) StatAt(ctx context.Context, p string, rev uint64) (store.Entry, error) {
	return d.stat(ctx, p, func(ctx context.Context, p string) (store.Entry, error) { return d.c.rt.st.StatAt(ctx, p, rev) })
}

// Open is store.Store.Open for a file the caller may read; the call
// records the content's size and hash.
func (d *Door) Open(ctx context.Context, p string) (store.Content, error) {
	return d.opened(then(d.admit(p, false), func() (store.Content, error) { return d.c.rt.st.Open(ctx, p) }))
}

// OpenAt is store.Store.OpenAt for a file the caller may read; the call
// records the content's size and hash.
func (d *Door) OpenAt(ctx context.Context, p string, rev uint64) (store.Content, error) {
	return d.opened(then(d.admit(p, false), func() (store.Content, error) { return d.c.rt.st.OpenAt(ctx, p, rev) }))
}

// opened records what was opened on the call.
func (d *Door) opened(c store.Content, err error) (store.Content, error) {
	if err == nil {
		d.c.Size, d.c.SHA256 = c.Size(), c.SHA256()
	}
	return c, err
}

// ReadDir is store.Store.ReadDir of a directory the caller may see,
// without the entries it may not.
func (d *Door) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	return d.shown(then(d.admit(dir, true), func() ([]store.Entry, error) { return d.c.rt.st.ReadDir(ctx, dir) }))
}

// ReadDirAt is store.Store.ReadDirAt of a directory the caller may see,
// without the entries it may not.
func (d *Door) ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error) {
	return d.shown(then(d.admit(dir, true), func() ([]store.Entry, error) { return d.c.rt.st.ReadDirAt(ctx, dir, rev) }))
}

// shown keeps the entries the caller may see.
func (d *Door) shown(entries []store.Entry, err error) ([]store.Entry, error) {
	return slices.DeleteFunc(entries, func(e store.Entry) bool { return !d.visible(e.Path, e.IsDir()) }), err
}

// Snapshots returns the snapshots whose prefix the caller may read, as
// guide_snapshot lists them: each Name as the caller knows it (its own
// tenant's without the suffix the store keeps), sorted by that name.
// Where the caller's own snapshot and another stored under the same name
// are both readable, the name is its own (as Store.Snapshot resolves it).
func (d *Door) Snapshots(ctx context.Context) ([]store.Snapshot, error) {
	if err := d.audited(); err != nil {
		return nil, err
	}
	all, err := d.c.rt.st.Snapshots(ctx)
	if err != nil {
		return nil, fmt.Errorf("snapshots: %w", err)
	}
	all = slices.DeleteFunc(all, func(s store.Snapshot) bool { return !d.v.Readable(s.Prefix) })
	sfx := snapshotSuffix(d.c.tenant)
	own := map[string]bool{}
	for _, s := range all {
		if name, ok := strings.CutSuffix(s.Name, sfx); ok && sfx != "" {
			own[name] = true
		}
	}
	out := all[:0]
	for _, s := range all {
		name := snapshotName(d.c.tenant, s.Name)
		if name == s.Name && own[name] {
			continue // hidden by the caller's own snapshot of that name
		}
		s.Name = name
		out = append(out, s)
	}
	all = out
	slices.SortStableFunc(all, func(a, b store.Snapshot) int { return strings.Compare(a.Name, b.Name) })
	return all, nil
}

// Link returns the URL of the resource link to version e of a file (see
// package httpfile), bound to the caller, on the listener the call
// arrived on; "" for a call that did not come over HTTP (stdio), which has
// no listener to point at.
func (c *Call) Link(e store.Entry) string {
	base := BaseURL(c.ctx)
	if base == "" || e.IsDir() || e.Revision == 0 {
		return ""
	}
	return base + httpfile.Link(c.key, e.Path, e.Revision)
}

// FileLink returns the resource link to version e of a file (see Link)
// when the call came over HTTP and the file is larger than
// Settings.LinkMinBytes: a read tool then hands out the link rather than
// the content.
func (c *Call) FileLink(e store.Entry) (mcp.ResourceLink, bool) {
	least := c.rt.env.LinkMinBytes
	if least < 0 || e.Size <= least {
		return mcp.ResourceLink{}, false
	}
	u := c.Link(e)
	if u == "" {
		return mcp.ResourceLink{}, false
	}
	l := mcp.NewResourceLink(u, depotpath.Base(e.Path),
		fmt.Sprintf("%s at revision %d, %d bytes, sha256 %s: GET it with this session's credentials (Range requests work; the ETag is the sha256). It reads this version while the depot keeps it.", e.Path, e.Revision, e.Size, e.SHA256),
		linkType(e.Path))
	size := e.Size
	l.Size = &size
	return l, true
}

// linkType is the media type of a link to the file at p, by its name.
func linkType(p string) string {
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// WithLinks appends out's resource links to res, a shape's rendering of
// out; res may be nil (a rendering that failed).
func WithLinks(res *mcp.CallToolResult, out Reply) *mcp.CallToolResult {
	if res != nil {
		for _, l := range out.Links {
			res.Content = append(res.Content, l)
		}
	}
	return res
}
