package dav

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/depotfs/depotfs/httpfile"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
)

// Prefix is the URL path below which the depot is served; Prefix+"x/y"
// is the depot path /x/y.
const Prefix = "/dav/"

// Tree is the depot as one request's caller may see it: every method
// refuses a path the caller may not see with an error wrapping
// policy.ErrDenied, which the handler answers as a path that does not
// exist; listings leave such entries out.
type Tree interface {
	Stat(ctx context.Context, p string) (store.Entry, error)
	ReadDir(ctx context.Context, dir string) ([]store.Entry, error)
	Open(ctx context.Context, p string) (store.Content, error)
	StatAt(ctx context.Context, p string, rev uint64) (store.Entry, error)
	ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error)
	OpenAt(ctx context.Context, p string, rev uint64) (store.Content, error)
	// Snapshots lists the snapshots the caller may read, each named as
	// the caller knows it.
	Snapshots(ctx context.Context) ([]store.Snapshot, error)
}

// Request is one request's tree and its record.
type Request interface {
	Tree
	// Finish records the request's outcome (err nil: success) for the
	// depot path p it was about; an error means the record could not be
	// written, and the request must fail if it has not answered yet.
	Finish(p string, err error) error
}

// Options configure the handler. Begin is required.
type Options struct {
	// Begin starts a request of method; ctx carries the caller's
	// identity.
	Begin func(ctx context.Context, method string) Request
	// Now is the clock snapshots expire by; nil means time.Now.
	Now func() time.Time
}

// ErrRequest is what every request the handler refuses for its form
// wraps (a write method, a bad URL, depth infinity, a bad body): the
// client's mistake, not a failure of the depot.
var ErrRequest = errors.New("WebDAV request refused")

// ErrReadOnly is the failure recorded for a request with a method that
// writes: the door is read-only.
var ErrReadOnly = fmt.Errorf("%w: depotfs serves WebDAV read-only", ErrRequest)

// errBadPath is the failure recorded for a URL that names no depot path.
var errBadPath = fmt.Errorf("%w: the URL names no depot path", ErrRequest)

// allowed is the Allow header: the methods served.
const allowed = "OPTIONS, GET, HEAD, PROPFIND"

// Handler serves WebDAV; it is safe for concurrent use.
type Handler struct {
	opts Options
}

var _ http.Handler = (*Handler)(nil)

// New returns the handler for opts.
func New(opts Options) *Handler {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Handler{opts: opts}
}

// ServeHTTP answers one WebDAV request below Prefix.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req := h.opts.Begin(r.Context(), r.Method)
	rw := &recorder{ResponseWriter: w}
	p, err := h.serve(rw, r, req)
	if auditErr := req.Finish(p, err); auditErr != nil && !rw.begun {
		http.Error(w, "depotfs cannot write its audit log, so it refuses requests until it can", http.StatusServiceUnavailable)
	}
}

// serve answers r and returns the depot path it was about and its
// failure, for the record. Nothing is written to w before the last
// check that could refuse the request.
func (h *Handler) serve(w *recorder, r *http.Request, t Tree) (string, error) {
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("DAV", "1")
		w.Header().Set("MS-Author-Via", "DAV")
		w.Header().Set("Allow", allowed)
		w.WriteHeader(http.StatusOK)
		return "", nil
	case http.MethodGet, http.MethodHead, "PROPFIND":
	default:
		w.Header().Set("Allow", allowed)
		http.Error(w, r.Method+" refused: depotfs serves WebDAV read-only ("+allowed+"). Write through the MCP tools (guide_read_file, fs write) instead.", http.StatusMethodNotAllowed)
		return "", ErrReadOnly
	}
	loc, err := h.locate(r.Context(), t, r.URL.Path)
	if err != nil {
		writeError(w, "", err)
		return "", err
	}
	if r.Method == "PROPFIND" {
		return loc.path, h.propfind(w, r, loc)
	}
	return loc.path, h.get(w, r, loc)
}

// get answers a GET or HEAD: a file's content, or a directory's HTML
// listing.
func (h *Handler) get(w *recorder, r *http.Request, loc location) error {
	e, err := loc.stat(r.Context())
	if err != nil {
		writeError(w, loc.path, err)
		return err
	}
	if e.IsDir() {
		if !strings.HasSuffix(r.URL.Path, "/") {
			http.Redirect(w, r, r.URL.EscapedPath()+"/", http.StatusMovedPermanently)
			return nil
		}
		entries, err := loc.readDir(r.Context())
		if err != nil {
			writeError(w, loc.path, err)
			return err
		}
		return listHTML(w, r, loc, entries)
	}
	c, err := loc.open(r.Context())
	if err != nil {
		writeError(w, loc.path, err)
		return err
	}
	defer c.Close()
	return httpfile.Serve(w, r, e, c)
}

// writeError answers a failure about depot path p ("" when the URL names
// none) that happened before the response began. A path the caller may
// not see is not found, in the same words as one that does not exist: the
// answer names nothing.
func writeError(w http.ResponseWriter, p string, err error) {
	switch {
	case errors.Is(err, errBadPath):
		http.Error(w, "bad request: the URL does not name a depot path (no '..', NUL or empty components; at most 4096 bytes)", http.StatusBadRequest)
	case errors.Is(err, store.ErrNotExist), errors.Is(err, policy.ErrDenied), errors.Is(err, store.ErrNotDir), errors.Is(err, store.ErrIsDir):
		http.Error(w, "not found", http.StatusNotFound)
	case errors.Is(err, store.ErrNotPresent):
		w.Header().Set("Retry-After", "10")
		http.Error(w, "this file is listed but its content has not arrived yet; the mount or the MCP tools ask the agents for it, WebDAV does not: retry later", http.StatusServiceUnavailable)
	case errors.Is(err, store.ErrClosed), errors.Is(err, store.ErrUnavailable):
		w.Header().Set("Retry-After", "5")
		http.Error(w, "the depot cannot answer now; retry later", http.StatusServiceUnavailable)
	default:
		httpfile.Fail(w, p, err)
	}
}

// recorder notes whether the response has begun.
type recorder struct {
	http.ResponseWriter
	begun bool
}

func (r *recorder) WriteHeader(code int) {
	r.begun = true
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.begun = true
	return r.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// cleanURLPath returns the depot path a URL path below Prefix names, or
// errBadPath: a path depotpath.Clean refuses or would change (".."
// however it is spelt once decoded, NUL, empty components) names none.
func cleanURLPath(urlPath string) (string, error) {
	rest, ok := strings.CutPrefix(urlPath+"/", Prefix)
	if !ok {
		return "", errBadPath
	}
	p := "/" + strings.TrimSuffix(rest, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return depotpath.Root, nil
	}
	clean, err := depotpath.Clean(p)
	if err != nil || clean != p {
		return "", errBadPath
	}
	return clean, nil
}
