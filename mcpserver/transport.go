package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/lift"
	"github.com/depotfs/depotfs/mcpserver/internal/outbox"
	"github.com/depotfs/depotfs/mcpserver/internal/rpcerr"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// ErrStdioBusy is returned by ServeStdio while another ServeStdio is running
// in the same process.
var ErrStdioBusy = errors.New("mcpserver: another stdio transport is running in this process")

// stdioActive guards mcp-go's stdio session, which is a package-level
// singleton in mcp-go: two stdio transports in one process would share it
// and write each other's replies. This is the one piece of package state;
// it mirrors a process-wide resource.
var stdioActive atomic.Bool

// Handler returns the streamable HTTP transport as an http.Handler; depotfs
// mounts it at /mcp, and at /upload/ for the PUTs of raw uploads that
// guide_begin_upload begins (their bodies are limited by the store's file
// size limit as they stream, not held in memory). Every other request gets
// a body limit of Options.MaxRequestBytes (a body announced larger is
// refused with a JSON-RPC error saying how to send more) and the caller's
// identity: the one already in the
// request's context, put there by an authenticating middleware in front
// (internal/auth.Authenticator), or else the unauthenticated identity of
// its remote address (identity.HTTP, narrowed by Options.LocalGrants). A
// server that requires authentication must therefore always be reached
// through that middleware. Requests over
// loopback must carry a loopback Host header (DNS rebinding protection).
//
// Two kinds of request stay open to carry notifications: the GET stream of
// a session (protocol versions up to 2025-11-25) and a subscriptions/listen
// request (2026-07-28 on). Both end when Close is called, and are refused
// with 503 afterwards, so http.Server.Shutdown, called after Close, waits
// only for calls in flight, which finish within Options.CommitTimeout once
// they have started writing.
//
// The handler is safe for concurrent use; every call returns the same one.
func (s *Server) Handler() http.Handler { return s.http }

func (s *Server) newHandler() http.Handler {
	lim := s.opts.HTTP
	s.sessions = newSessions(lim.MaxSessions, lim.MaxSessionsPerIdentity)
	s.sessions.end = s.endSessions
	s.inflight = newBudget(lim.MaxInflightBytes)
	h := server.NewStreamableHTTPServer(s.mcp, server.WithStreamableHTTPLogger(s.log),
		server.WithSessionIdManagerResolver(s.sessions), server.WithSessionIdleTTL(lim.SessionIdleTimeout),
		// The Host check is ours (checkHost): it knows the names the
		// operator configured, and logs and audits its refusals.
		server.WithDisableLocalhostProtection(true))
	s.streamable = h
	edge := protocolEdge(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if _, ok := identity.FromContext(ctx); !ok {
			ctx = identity.NewContext(ctx, s.local(identity.HTTP(r)))
		}
		ctx = tool.WithBaseURL(ctx, s.baseURL(r))
		r = r.WithContext(ctx)
		if !s.checkHost(w, r) {
			return
		}
		if isDoor(r.URL.Path) {
			if r.Body != nil {
				// Doors take only small bodies (a PROPFIND's), read
				// under the same stall limits as any other.
				r.Body = newWatchedBody(r.Body, w, lim, doorMaxBody)
			}
			s.serveDoor(w, r)
			return
		}
		if r.URL.Path == BackupPath {
			s.serveBackup(w, r)
			return
		}
		if r.URL.Path == ExportPath {
			s.serveExport(w, r)
			return
		}
		if r.URL.Path == ChangesPath {
			s.serveChanges(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, guide.UploadPath) || r.URL.Path == ImportPath {
			// A raw upload's body is as large as the file, an import's
			// as the depot: the store limits the first while it streams.
			// A stall still ends either.
			if r.Body != nil {
				body := newWatchedBody(r.Body, w, lim, math.MaxInt64-1)
				r.Body = body
				if lim.Recheck != nil {
					// A PUT streams for as long as the file takes: it is
					// rechecked like a stream, so a revoked credential's
					// upload is cut, not stored.
					ctx, cancel := context.WithCancel(ctx)
					defer cancel()
					r = r.WithContext(ctx)
					defer s.sessions.open(&stream{cred: credentialOf(r), kind: "upload", cancel: func() { body.stop(); cancel() }})()
				}
			}
			serve := s.uploads.ServeHTTP
			if r.URL.Path == ImportPath {
				serve = s.serveImport
			}
			serve(w, r)
			return
		}
		r, body, release, ok := s.limitBody(w, r)
		if !ok {
			return
		}
		defer release()
		sid := r.Header.Get("Mcp-Session-Id")
		// A session with a request in flight or a stream open is busy:
		// never ended to make room for another.
		defer s.sessions.enter(sid)()
		if isStream(r) {
			if s.done.Err() != nil {
				http.Error(w, "depotfs is shutting down: no new notification streams", http.StatusServiceUnavailable)
				return
			}
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.done, cancel)()
			if lim.Recheck != nil {
				defer s.sessions.open(&stream{cred: credentialOf(r), session: sid, cancel: cancel})()
			}
			r = r.WithContext(ctx)
			w, r = withListenAck(w, r)
			if _, ok := w.(http.Flusher); ok {
				// depotfs writes its resource notifications to the
				// stream itself, in order (package outbox); a client
				// that stops reading is cut off as on GET /changes.
				out := outbox.New(w, lim.BodyIdleTimeout)
				go out.Run(ctx)
				defer out.Close()
				if r.Method == http.MethodGet {
					defer s.streams.Add(sid, out)()
				} else {
					r = r.WithContext(outbox.NewContext(r.Context(), out))
				}
				w = out
			}
		} else {
			// A failed resources/read gets the error depotfs chooses
			// (internal/rpcerr): one Fixes per request.
			fixes := rpcerr.New()
			w = fixes.ResponseWriter(w)
			r = liftContent(r.WithContext(rpcerr.NewContext(r.Context(), fixes)), body)
		}
		edge.ServeHTTP(w, r)
	})
}

// liftContent takes the long strings of a tool call's arguments out of
// body, r's body that limitBody read, before mcp-go parses it several
// times over (package lift); the tool pipeline puts them back.
func liftContent(r *http.Request, body []byte) *http.Request {
	if len(body) < lift.MinLen {
		return r
	}
	small, t, ok := lift.Lift(body)
	if !ok {
		return r
	}
	r.Body = readCloser{bytes.NewReader(small), r.Body}
	r = r.WithContext(lift.NewContext(r.Context(), t))
	r.ContentLength = int64(len(small))
	return r
}

// baseURL is where r reached the server, for URLs on the same listener:
// Options.PublicURL when set, else r's scheme and host.
func (s *Server) baseURL(r *http.Request) string {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return cmp.Or(s.opts.PublicURL, scheme+r.Host)
}

// isStream reports whether r opens a notification stream: a session's GET
// stream, or a subscriptions/listen request, whose method the 2026-07-28
// transport requires in the Mcp-Method header (mcp-go checks it against
// the body).
func isStream(r *http.Request) bool {
	return r.Method == http.MethodGet ||
		r.Method == http.MethodPost && r.Header.Get(mcp.HeaderMethod) == string(mcp.MethodSubscriptionsListen)
}

// stdioWorkers is how many tool calls a stdio client may have running at
// once (mcp-go's default is 5; more queue). Calls spend most of their time
// waiting for the commit that covers them, and concurrent calls share
// commits, so a client with many calls in flight gets them all into one.
const stdioWorkers = 32

// ServeStdio serves MCP over newline-delimited JSON-RPC on in and out, for a
// local client that started depotfs. Calls carry the identity of the OS
// user running this process, with full grants unless Options.LocalGrants
// narrows them. Nothing but protocol messages is written to
// out; transport errors go to Options.Logger.
//
// ServeStdio returns nil when in reaches end of file, after the calls
// already running have finished and replied (within
// Options.CommitTimeout); calls not yet started are dropped, as the client
// has gone. When ctx ends, it takes no new calls: every request read from
// then on is answered with ShuttingDownReply (its id echoed), and it
// returns once the calls in flight have replied. It does not close in or
// out. Its reading goroutine cannot be woken from a blocked Read: it
// lingers until in returns, writing nothing after ServeStdio has
// returned, so a caller that wants no goroutine left closes in.
//
// Only one ServeStdio may run per process at a time (mcp-go's stdio session
// is process-wide); a second concurrent call fails with ErrStdioBusy.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.ServeStdioDrain(ctx, in, out, nil)
}

// ServeStdioDrain is ServeStdio for a process with more to finish than the
// calls in flight once ctx ends: after they have replied it calls drain
// (when not nil) and returns when drain does, still answering requests
// with ShuttingDownReply meanwhile. depotfs serve waits there for the
// files open in its mount, so that a client hears why until the process
// exits.
func (s *Server) ServeStdioDrain(ctx context.Context, in io.Reader, out io.Writer, drain func()) error {
	if !stdioActive.CompareAndSwap(false, true) {
		return ErrStdioBusy
	}
	defer stdioActive.Store(false)

	o := &stdioOut{w: out}
	defer o.stop()
	gate := newStdioGate(o, s.log)
	// The end of ctx is this transport's signal to shut down, and the
	// Server's shutdown (BeginShutdown, or ctx's end) shuts the gate:
	// one shutdown for both transports. The gate is registered before it
	// reads: registered after a shutdown, it is shut at once, which must
	// not wait for a line it is handing to an mcp-go that has not started.
	defer s.drain.onStop(gate.shut)()
	defer context.AfterFunc(ctx, s.drain.stop)()
	go gate.run(in)

	ss := server.NewStdioServer(s.mcp)
	server.WithWorkerPoolSize(stdioWorkers)(ss)
	ss.SetErrorLogger(slog.NewLogLogger(s.log.Handler(), slog.LevelWarn))
	fixes := rpcerr.New() // a failed resources/read gets the error depotfs chooses
	// mcp-go's loop is not cancelled by ctx: it ends at the end of the
	// input the gate gives it, so a line it has read is always served.
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	mctx = rpcerr.NewContext(identity.NewContext(mctx, s.local(identity.Stdio())), fixes)
	err := ss.Listen(mctx, gate.pr, fixes.Writer(o))
	gate.pr.CloseWithError(errStdioStopped) // a line handed over from now on is refused
	if _, stopped := s.drain.state(); stopped && drain != nil {
		drain()
	}
	if err == nil {
		return nil
	}
	return fmt.Errorf("mcp stdio: %w", err)
}
