package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/dav"
	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// The HTTP doors onto the tree besides MCP: WebDAV (package dav) below
// dav.Prefix, and the resource links the read tools hand out below
// httpfile.LinkPrefix. Both read through a tool.Door: the caller's
// grants as the tools decide them, one audit record per request, and the
// response deadlines and minimum rate of every long HTTP response.

// DAVPath and LinkPath are the URL paths below which the listener serves
// WebDAV and resource links.
const (
	DAVPath  = dav.Prefix
	LinkPath = httpfile.LinkPrefix
)

// DAVName and LinkName name WebDAV requests and resource link GETs in
// the audit log and the call log, where tools have their names.
const (
	DAVName  = "webdav"
	LinkName = "files"
)

// doorMaxBody bounds what a door reads of a request body.
const doorMaxBody = 1 << 20

// isDoor reports whether the URL path p belongs to a door.
func isDoor(p string) bool {
	return p == strings.TrimSuffix(dav.Prefix, "/") || strings.HasPrefix(p, dav.Prefix) || strings.HasPrefix(p, httpfile.LinkPrefix)
}

// serveDoor answers a request of a door.
func (s *Server) serveDoor(w http.ResponseWriter, r *http.Request) {
	w = watchedWriter{w, newWatchedResponse(w, s.opts.HTTP)}
	if strings.HasPrefix(r.URL.Path, httpfile.LinkPrefix) {
		s.serveLink(w, r)
		return
	}
	s.dav.ServeHTTP(w, r)
}

// newDAV returns the WebDAV handler over the server's doors.
func (s *Server) newDAV() *dav.Handler {
	return dav.New(dav.Options{Now: s.opts.Now, Begin: func(ctx context.Context, _ string) dav.Request {
		return davRequest{s.rt.Door(ctx, DAVName)}
	}})
}

// davRequest is one WebDAV request's tree: its Door.
type davRequest struct{ *tool.Door }

var _ dav.Request = davRequest{}

// Finish records the request about p: a write as a denial, a refused
// form as the client's mistake (validation), not a failure of depotfs.
func (d davRequest) Finish(p string, err error) error {
	if p != "" {
		d.Call().Path = p
	}
	switch {
	case errors.Is(err, dav.ErrReadOnly):
		// A write through a read-only door is refused like a write no
		// grant allows: audited as a denial (and grouped in bursts).
		err = &tool.Refusal{Type: tool.ErrorSecurity, Deny: true, Message: err.Error(),
			Instruction: "Write through the MCP tools; WebDAV on depotfs only reads."}
	case errors.Is(err, dav.ErrRequest):
		err = &tool.Refusal{Type: tool.ErrorValidation, Message: err.Error(),
			Instruction: "WebDAV on depotfs lists one directory at a time (Depth 0 or 1) and takes clean paths only."}
	}
	return d.Door.Finish(err)
}

// errOtherLink is the recorded failure of a link GET by an identity the
// link was not handed to; the client hears only "not found".
var errOtherLink = &tool.Refusal{Type: tool.ErrorSecurity, Deny: true,
	Message:     "this link was handed to another identity",
	Instruction: "Ask for a link of your own with a read tool."}

// serveLink answers a GET or HEAD of a resource link: the file's version
// the link names, if the link was handed to the caller, the caller may
// read the file and the version is still kept. Anything else is 404 in
// the same words, which name nothing.
func (s *Server) serveLink(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "a resource link is read with GET (ranges allowed) or HEAD", http.StatusMethodNotAllowed)
		return
	}
	d := s.rt.Door(r.Context(), LinkName)
	c, e, err := s.openLink(r.Context(), d, r.URL.Path)
	if err == nil {
		defer c.Close()
		d.Call().Status = "revision " + strconv.FormatUint(e.Revision, 10)
	}
	if auditErr := d.Finish(err); auditErr != nil {
		http.Error(w, "depotfs cannot write its audit log, so it refuses reads until it can", http.StatusServiceUnavailable)
		return
	}
	switch {
	case err == nil:
		// The record is written before the reply, so a read that fails
		// while serving is not in it; the store logs and counts a
		// damaged chunk itself.
		_ = httpfile.Serve(w, r, e, c)
	case errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the depot cannot answer now; retry later", http.StatusServiceUnavailable)
	case errors.Is(err, store.ErrCorrupt):
		httpfile.Fail(w, d.Call().Path, err)
	default:
		http.Error(w, "not found", http.StatusNotFound)
	}
}

// openLink opens the version the link at urlPath names, for d's caller.
func (s *Server) openLink(ctx context.Context, d *tool.Door, urlPath string) (store.Content, store.Entry, error) {
	t, err := httpfile.ParseLink(urlPath)
	if err != nil {
		return nil, store.Entry{}, &tool.Refusal{Type: tool.ErrorNotFound, Message: "no such link", Instruction: "Use the URL a read tool handed out, unchanged."}
	}
	d.Call().Path = t.Path
	if !t.Check(d.Key()) {
		d.Call().Note(t.Path)
		return nil, store.Entry{}, errOtherLink
	}
	e, err := d.StatAt(ctx, t.Path, t.Rev)
	if err == nil && (e.IsDir() || e.Revision != t.Rev) {
		err = store.ErrNotExist // the version linked is gone
	}
	if err != nil {
		return nil, store.Entry{}, err
	}
	c, err := d.OpenAt(ctx, t.Path, t.Rev)
	return c, e, err
}

// watchedWriter is a response whose body is written under the limits of
// watchedResponse: a reader that stalls, or reads slower than the
// minimum rate, is cut.
type watchedWriter struct {
	http.ResponseWriter
	body *watchedResponse
}

func (w watchedWriter) Write(p []byte) (int, error) { return w.body.Write(p) }

// Unwrap gives http.ResponseController the writer underneath.
func (w watchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
