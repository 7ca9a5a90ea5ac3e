package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sync/semaphore"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// Defaults of HTTPLimits.
const (
	DefaultBodyIdleTimeout = 30 * time.Second
	// DefaultBodyMinRate is the slowest a request body may arrive on
	// average, once it has had BodyIdleTimeout to start.
	DefaultBodyMinRate        = 1 << 10
	DefaultMaxInflightBytes   = 256 << 20
	DefaultInflightWait       = 30 * time.Second
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultMaxSessions is far above what a few identities can hold at
	// DefaultMaxSessionsPerIdentity each, so that no one identity, nor a
	// few, can take every session.
	DefaultMaxSessions            = 4096
	DefaultMaxSessionsPerIdentity = 64
)

// callMemoryFactor is what a call's body costs in memory while it is
// decoded, in multiples of its size: mcp-go's copy of the body, the
// arguments it unmarshals, the decoder's copy and the decoded content.
// Measured with 16 MiB calls (see DESIGN.md, "Bounded HTTP").
const callMemoryFactor = 6

// smallBody is the body size below which a request is not charged against
// MaxInflightBytes: pings, listings and small calls never wait behind
// large ones.
const smallBody = 1 << 20

// HTTPLimits bound what HTTP clients can hold in the server. Zero fields
// take the Default* values.
type HTTPLimits struct {
	// BodyIdleTimeout ends a request whose body stops arriving for this
	// long (the connection is closed).
	BodyIdleTimeout time.Duration
	// BodyMinRate, in bytes per second, ends a request whose body arrives
	// slower than this on average once BodyIdleTimeout has passed since
	// it began: a client trickling a byte now and then never stalls long
	// enough for BodyIdleTimeout alone. Negative means no minimum.
	BodyMinRate int64
	// MaxInflightBytes bounds the estimated memory of the request bodies
	// being decoded at once: a request is charged callMemoryFactor times
	// its size (its Content-Length, or MaxRequestBytes when it declares
	// none) before its body is read, and waits until there is room.
	MaxInflightBytes int64
	// InflightWait is how long a request waits for room before it is
	// answered 503 with a retryable JSON-RPC error.
	InflightWait time.Duration
	// SessionIdleTimeout drops a session unused for this long; its id is
	// then answered 404, as the protocol asks, and the client starts a new
	// session.
	SessionIdleTimeout time.Duration
	// MaxSessions bounds the live sessions of all identities: a new
	// session beyond it ends the least recently used idle session (no
	// request in flight, no open stream), whose id is then answered 404,
	// and is refused with 503 only when every session is busy.
	MaxSessions int
	// MaxSessionsPerIdentity bounds the live sessions of one identity (an
	// unauthenticated HTTP caller is its host): a new session of an
	// identity at the limit ends that identity's least recently used idle
	// session, and is refused with 503 only when all of them are busy.
	// Other identities are not affected.
	MaxSessionsPerIdentity int
	// Recheck, when set, authenticates a request again; open streams and
	// sessions are rechecked every half second with the credential that opened
	// them, so a revoked credential loses them within a second or two.
	Recheck func(*http.Request) error
}

func (l HTTPLimits) withDefaults() HTTPLimits {
	orDefault(&l.BodyIdleTimeout, DefaultBodyIdleTimeout)
	l.BodyMinRate = cmp.Or(l.BodyMinRate, DefaultBodyMinRate)
	orDefault(&l.MaxInflightBytes, DefaultMaxInflightBytes)
	orDefault(&l.InflightWait, DefaultInflightWait)
	orDefault(&l.SessionIdleTimeout, DefaultSessionIdleTimeout)
	orDefault(&l.MaxSessions, DefaultMaxSessions)
	orDefault(&l.MaxSessionsPerIdentity, DefaultMaxSessionsPerIdentity)
	return l
}

// JSON-RPC error codes of refusals by the HTTP limits.
const (
	// codeServerBusy: retry later (the body was not read).
	codeServerBusy = -32000
	// codeTooLarge: the body is over the limit; do not retry as is.
	codeTooLarge = -32001
)

// rpcErrorBody is the JSON-RPC error response to the request id (nil:
// null); data, when not nil, is the error's data.
func rpcErrorBody(id json.RawMessage, code int, msg string, data any) ([]byte, error) {
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, msg, data}})
}

// writeRPCError answers a request mcp-go has not seen with a JSON-RPC
// error response (see rpcErrorBody).
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	body, _ := rpcErrorBody(id, code, msg, data)
	writeJSON(w, status, body)
}

// writeJSON answers with the JSON body.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// limitBody applies the body limits to a POST before mcp-go reads it, and
// reserves a place for the session it would start. It returns false when
// it has answered the request itself; otherwise r's body has been read
// whole (bounded, watched for stalls, charged) and is returned, r reads
// it again, and release must be called when the request is done (it
// settles the session reservation, see sessions.settle).
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) (_ *http.Request, body []byte, release func(), ok bool) {
	release = func() {}
	if r.Method != http.MethodPost || r.Body == nil {
		return r, nil, release, true
	}
	defer func() {
		if !ok {
			release()
			release = func() {}
		}
	}()
	limit := s.opts.MaxRequestBytes
	if r.ContentLength > limit {
		s.refuseTooLarge(w, r, r.ContentLength, limit)
		return r, nil, release, false
	}
	size := r.ContentLength
	if size < 0 {
		size = limit
	}
	if size >= smallBody {
		cost := size * callMemoryFactor
		if err := s.inflight.acquire(r.Context(), cost, s.opts.HTTP.InflightWait); err != nil {
			s.log.Warn("http request refused: bytes in flight at the limit", "remote", r.RemoteAddr, "size", size, "limit", s.opts.HTTP.MaxInflightBytes, "err", err)
			w.Header().Set("Retry-After", "1")
			writeRPCError(w, http.StatusServiceUnavailable, nil, codeServerBusy,
				fmt.Sprintf("depotfs is busy: the calls in flight hold the memory allowed for request bodies (--max-inflight-bytes %d); retry this request shortly", s.opts.HTTP.MaxInflightBytes),
				map[string]any{"retryable": true, "max_inflight_bytes": s.opts.HTTP.MaxInflightBytes})
			return r, nil, release, false
		}
		release = func() { s.inflight.release(cost) }
	}
	// Read whole here, into one buffer of the announced size, so that one
	// without a declared length that is over the limit is answered 413
	// (a declared length cannot be exceeded), and so that the body is
	// parsed as mcp-go parses it (opensSession).
	buf := bytes.NewBuffer(make([]byte, 0, max(r.ContentLength, 0)+1))
	_, err := buf.ReadFrom(newWatchedBody(r.Body, w, s.opts.HTTP, limit))
	if errors.Is(err, errBodyTooLarge) {
		s.refuseTooLarge(w, r, -1, limit)
		return r, nil, release, false
	}
	if err != nil {
		writeRPCError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "request body could not be read: "+err.Error(), nil)
		return r, nil, release, false
	}
	body = buf.Bytes()
	r.Body = readCloser{bytes.NewReader(body), r.Body}
	r.ContentLength = int64(len(body))
	// The protocol no longer allows batches: answer -32600 instead of
	// mcp-go's parse error.
	if first := bytes.TrimLeft(body, " \t\r\n"); len(first) > 0 && first[0] == '[' {
		writeRPCError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "JSON-RPC batches are not supported: send one request per HTTP POST", nil)
		return r, nil, release, false
	}
	if !opensSession(r.Header, body) {
		return r, body, release, true
	}
	r, settle, ok := s.reserveSession(w, r)
	charged := release
	return r, body, func() { settle(); charged() }, ok
}

// mayName reports whether body may hold the JSON string word (letters
// only): spelled out, or with \u escapes, the only other way to write a
// letter in JSON. A body without either cannot, which is cheaper to see
// than to parse it: the tool call of a push carries the file's content,
// and encoding/json scans every byte of a string, even one it skips.
func mayName(body []byte, word string) bool {
	return bytes.Contains(body, []byte(word)) || bytes.Contains(body, []byte(`\u`))
}

// opensSession reports whether mcp-go will start a session for a POST
// with this header and body: an initialize on a protocol revision with
// sessions. It parses the body whole, as mcp-go does (the same
// encoding/json, into the same fields), so that no spelling of the method
// (escapes, white space, case, duplicate keys, position) parses one way
// here and another there.
func opensSession(h http.Header, body []byte) bool {
	if !mayName(body, "initialize") {
		return false
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  json.RawMessage `json:"error,omitempty"`
		Method mcp.MCPMethod   `json:"method,omitempty"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != mcp.MethodInitialize {
		return false
	}
	var era struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	var meta string
	if json.Unmarshal(body, &era) == nil {
		meta = era.Params.Meta.ProtocolVersion()
	}
	return !mcp.IsModernProtocol(meta) && !mcp.IsModernProtocol(h.Get(mcp.HeaderProtocolVersion))
}

// reserveSession reserves a place for the session r will start (see
// sessions.reserve) and returns r carrying it, for sessions.Generate, and
// the func that settles it when r is done. It returns false when it has
// refused the request: the caller is at its session limit, or the server
// at its own, and every session in the way is busy.
func (s *Server) reserveSession(w http.ResponseWriter, r *http.Request) (_ *http.Request, settle func(), ok bool) {
	who, _ := identity.FromContext(r.Context())
	t, err := s.sessions.reserve(sessionOwner(who))
	if err == nil {
		return r.WithContext(context.WithValue(r.Context(), ticketKey{}, t)), func() { s.sessions.settle(t, w.Header().Get("Mcp-Session-Id")) }, true
	}
	w.Header().Set("Retry-After", "1")
	msg := fmt.Sprintf("depotfs has %d live sessions, its limit (--max-sessions), and every one is busy with a request or a stream; retry shortly", s.opts.HTTP.MaxSessions)
	if errors.Is(err, errIdentitySessionsFull) {
		msg = fmt.Sprintf("%s's tenant (%s: every credential with its grants) holds %d live sessions, the limit for one tenant (--max-sessions-per-identity), and every one is busy with a request or a stream; retry when one is done",
			who.String(), sessionOwner(who), s.opts.HTTP.MaxSessionsPerIdentity)
	}
	s.log.Warn("http session refused: at the limit, all busy", "identity", who.String(), "err", err)
	writeRPCError(w, http.StatusServiceUnavailable, nil, codeServerBusy, msg,
		map[string]any{"retryable": true, "max_sessions": s.opts.HTTP.MaxSessions, "max_sessions_per_identity": s.opts.HTTP.MaxSessionsPerIdentity})
	return r, func() {}, false
}

// errBodyTooLarge is what a watchedBody returns past its limit.
var errBodyTooLarge = errors.New("request body over the limit")

// errBodyTooSlow is what a watchedBody returns once its body arrives
// slower than the minimum rate.
var errBodyTooSlow = errors.New("request body arriving slower than the minimum rate (--http-body-min-rate)")

// errBodyCut is what a watchedBody returns once cut (its credential was
// revoked).
var errBodyCut = errors.New("request body cut: the credential that sent it is no longer valid")

// watchedBody bounds a request body and ends it when it stalls, when it
// arrives slower than the minimum rate, or when cut: before every read it
// moves the connection's read deadline idle ahead.
type watchedBody struct {
	rc      io.ReadCloser
	ctl     *http.ResponseController
	idle    time.Duration
	minRate int64 // bytes per second on average after idle; <= 0: none
	start   time.Time
	read    int64 // bytes read so far
	left    int64 // bytes still allowed
	over    bool
	cut     atomic.Bool
}

// newWatchedBody watches rc, the body of the request w answers, under lim,
// allowing left bytes.
func newWatchedBody(rc io.ReadCloser, w http.ResponseWriter, lim HTTPLimits, left int64) *watchedBody {
	return &watchedBody{rc: rc, ctl: http.NewResponseController(w), idle: lim.BodyIdleTimeout, minRate: lim.BodyMinRate, start: time.Now(), left: left}
}

// stop cuts the body: a read blocked now fails at once, and every later
// one fails with errBodyCut. It is safe to call from any goroutine.
func (b *watchedBody) stop() {
	b.cut.Store(true)
	_ = b.ctl.SetReadDeadline(time.Now())
}

func (b *watchedBody) Read(p []byte) (int, error) {
	if b.over {
		return 0, errBodyTooLarge
	}
	if b.cut.Load() {
		return 0, errBodyCut
	}
	if took := time.Since(b.start); b.minRate > 0 && took > b.idle && float64(b.read) < float64(b.minRate)*took.Seconds() {
		_ = b.ctl.SetReadDeadline(time.Now())
		return 0, errBodyTooSlow
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	_ = b.ctl.SetReadDeadline(time.Now().Add(b.idle))
	if b.cut.Load() {
		// stop ran between the check above and the deadline just set.
		_ = b.ctl.SetReadDeadline(time.Now())
		return 0, errBodyCut
	}
	n, err := b.rc.Read(p)
	if b.cut.Load() {
		return 0, errBodyCut
	}
	if int64(n) > b.left {
		b.over = true
		return 0, errBodyTooLarge
	}
	b.left -= int64(n)
	b.read += int64(n)
	switch {
	case errors.Is(err, io.EOF):
		// Whole: the response (a stream, maybe) is not bound by it.
		_ = b.ctl.SetReadDeadline(time.Time{})
	case err != nil:
		// Stalled or broken: the deadline stays past, so the server's
		// attempt to read the rest fails at once and the connection
		// closes after the reply.
		_ = b.ctl.SetReadDeadline(time.Now())
	}
	return n, err
}

func (b *watchedBody) Close() error { return b.rc.Close() }

// refuseTooLarge answers 413 with a JSON-RPC error naming the limit, and
// audits the refusal once per burst from one address.
func (s *Server) refuseTooLarge(w http.ResponseWriter, r *http.Request, size, limit int64) {
	w.Header().Set("Connection", "close")
	msg := fmt.Sprintf("request body is over the limit of %d bytes", limit)
	if size >= 0 {
		msg = fmt.Sprintf("request body of %d bytes is over the limit of %d bytes", size, limit)
	}
	writeRPCError(w, http.StatusRequestEntityTooLarge, nil, codeTooLarge,
		msg+": send large files in chunks (guide_read_file with upload_id) or through guide_begin_upload",
		map[string]any{"limit": limit})
	s.refusals.note(tool.HostOf(r.RemoteAddr), func(n int) {
		who, _ := identity.FromContext(r.Context())
		s.auditEdge(&audit.Record{Event: audit.EventAuth, Stage: "request", Transport: "http", Remote: r.RemoteAddr,
			Identity: who.String(), Decision: audit.Deny,
			Reason: fmt.Sprintf("%s (%d refusal(s) from this address in this burst)", msg, n)}, "a refused request")
		s.log.Warn("http request refused: body over the limit", "remote", r.RemoteAddr, "size", size, "limit", limit, "refusals", n)
	})
}

// auditEdge appends rec, a refusal at the HTTP edge (what says which), to
// the audit log, if there is one.
func (s *Server) auditEdge(rec *audit.Record, what string) {
	if s.opts.Audit == nil {
		return
	}
	if err := s.opts.Audit.Append(rec); err != nil {
		s.log.Error("audit record of "+what+" not written", "remote", rec.Remote, "err", err)
	}
}

// burstWindow is how long refusals from one address count as one burst.
const burstWindow = 10 * time.Second

// refusalBursts records one refusal per address per burst: the first of a
// burst is reported at once, later ones are counted into the next report.
type refusalBursts struct {
	mu   sync.Mutex
	last map[string]*burst
}

type burst struct {
	start time.Time
	count int
}

// maxBurstAddrs bounds the addresses remembered.
const maxBurstAddrs = 4096

func (b *refusalBursts) note(host string, report func(n int)) {
	now := time.Now()
	b.mu.Lock()
	if b.last == nil {
		b.last = map[string]*burst{}
	}
	bu := b.last[host]
	if bu != nil && now.Sub(bu.start) < burstWindow {
		bu.count++
		b.mu.Unlock()
		return
	}
	n := 1
	if bu != nil {
		n += bu.count - 1
	}
	if len(b.last) >= maxBurstAddrs {
		for k, v := range b.last {
			if now.Sub(v.start) >= burstWindow {
				delete(b.last, k)
			}
		}
	}
	b.last[host] = &burst{start: now, count: 1}
	b.mu.Unlock()
	report(n)
}

// budget is the bytes of request bodies in flight: a weighted semaphore
// with FIFO waiters (x/sync's), where a request larger than the whole
// budget waits for it to be empty and then takes it all.
type budget struct {
	sem  *semaphore.Weighted
	size int64
}

func newBudget(size int64) *budget { return &budget{sem: semaphore.NewWeighted(size), size: size} }

// acquire takes n bytes, waiting up to wait for room; on failure it takes
// nothing.
func (b *budget) acquire(ctx context.Context, n int64, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := b.sem.Acquire(ctx, min(n, b.size)); err != nil {
		return fmt.Errorf("waited %v for %d bytes: %w", wait, n, err)
	}
	return nil
}

// release gives back n bytes taken by acquire.
func (b *budget) release(n int64) { b.sem.Release(min(n, b.size)) }

// LimitListener returns ln refusing (closing at once) a connection from an
// address that already has perAddr open; perAddr <= 0 means no limit.
// Refusals are logged once per burst per address. The result is safe for
// concurrent use.
func LimitListener(ln net.Listener, perAddr int, log interface{ Warn(string, ...any) }) net.Listener {
	if perAddr <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, per: perAddr, open: map[string]int{}, log: log}
}

type limitListener struct {
	net.Listener
	per    int
	log    interface{ Warn(string, ...any) }
	mu     sync.Mutex
	open   map[string]int
	bursts refusalBursts
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		host := tool.HostOf(c.RemoteAddr().String())
		l.mu.Lock()
		if l.open[host] >= l.per {
			l.mu.Unlock()
			c.Close()
			l.bursts.note(host, func(n int) {
				l.log.Warn("connection refused: too many from one address", "addr", host, "limit", l.per, "refusals", n)
			})
			continue
		}
		l.open[host]++
		l.mu.Unlock()
		return &countedConn{Conn: c, done: func() {
			l.mu.Lock()
			if l.open[host]--; l.open[host] <= 0 {
				delete(l.open, host)
			}
			l.mu.Unlock()
		}}, nil
	}
}

type countedConn struct {
	net.Conn
	once sync.Once
	done func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.done)
	return c.Conn.Close()
}
