// Package outbox writes the notifications depotfs sends itself (resource
// notifications) to a client's notification stream over streamable HTTP,
// in the order they were queued. mcp-go (v1.2.1) hands a session's
// notifications from one channel to whichever reader takes them first, the
// session's GET stream or the response of any request of the session in
// flight, so two of them can reach the client in the wrong order, and one
// taken by a request that ends just then is lost. A Stream instead wraps
// the ResponseWriter of one stream (a session's GET stream, a
// subscriptions/listen request), writes whole events under one lock with
// mcp-go's own, and sends what was Put from one goroutine, in order.
//
// It decides nothing about what is notified or to whom (package resources
// does), and holds nothing beyond each Stream's bounded queue.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// QueueLen is how many notifications a Stream holds for a client that is
// not reading them fast enough; Put refuses more.
const QueueLen = 256

// errNoFlush reports a ResponseWriter that cannot stream.
var errNoFlush = errors.New("outbox: the response cannot be flushed")

// Stream is one notification stream's writer: an http.ResponseWriter for
// mcp-go, which serves the stream, and a queue whose notifications Run
// writes between mcp-go's events. mcp-go writes each SSE event with one
// Write (writeSSEEvent), so an event of Run's never lands inside one of
// mcp-go's. It is safe for concurrent use.
type Stream struct {
	w     http.ResponseWriter
	ctl   *http.ResponseController
	idle  time.Duration // how long one of Run's writes may stall; 0: no limit
	queue chan mcp.JSONRPCNotification

	// ready is closed by the first Flush: mcp-go has sent the response's
	// headers (and a listen's acknowledgement, which must come first).
	ready     chan struct{}
	readyOnce sync.Once
	stop      chan struct{} // closed by Close
	stopOnce  sync.Once
	done      chan struct{} // closed when Run returns

	mu sync.Mutex // held for each write and flush to w, mcp-go's and Run's
}

var (
	_ http.ResponseWriter = (*Stream)(nil)
	_ http.Flusher        = (*Stream)(nil)
)

// New wraps w, the ResponseWriter of a stream, which must be an
// http.Flusher for anything to be sent. A write of Run's that stalls for
// idle (a client that stopped reading) fails, ending Run; 0 means no
// limit.
func New(w http.ResponseWriter, idle time.Duration) *Stream {
	return &Stream{w: w, ctl: http.NewResponseController(w), idle: idle, queue: make(chan mcp.JSONRPCNotification, QueueLen),
		ready: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
}

// Header returns the response's header map.
func (s *Stream) Header() http.Header { return s.w.Header() }

// WriteHeader sends the response's status line and headers.
func (s *Stream) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.WriteHeader(code)
}

// Write writes p, which mcp-go gives whole events in, between Run's.
func (s *Stream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// Flush sends what was written; the first one lets Run begin.
func (s *Stream) Flush() {
	s.mu.Lock()
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	s.mu.Unlock()
	s.readyOnce.Do(func() { close(s.ready) })
}

// Unwrap gives http.ResponseController the writer underneath.
func (s *Stream) Unwrap() http.ResponseWriter { return s.w }

// Put queues n for the client without blocking. It reports false when the
// queue is full: the client is not reading, and n is not sent.
func (s *Stream) Put(n mcp.JSONRPCNotification) bool {
	select {
	case s.queue <- n:
		return true
	default:
		return false
	}
}

// Run writes the queued notifications, in order, once mcp-go has flushed
// the stream's beginning, until ctx ends, Close is called or a write
// fails. The handler serving the stream runs it and calls Close before
// returning, after which Run writes nothing.
func (s *Stream) Run(ctx context.Context) {
	defer close(s.done)
	select {
	case <-s.ready:
	case <-ctx.Done():
		return
	case <-s.stop:
		return
	}
	for {
		select {
		case n := <-s.queue:
			if s.send(ctx, n) != nil {
				return
			}
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		}
	}
}

// send writes n as one SSE event, the way mcp-go writes its own, and
// flushes it.
func (s *Stream) send(ctx context.Context, n mcp.JSONRPCNotification) error {
	data, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("outbox: encoding %s: %w", n.Method, err)
	}
	event := fmt.Appendf(nil, "event: message\ndata: %s\n\n", data)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f, ok := s.w.(http.Flusher)
	if !ok {
		return errNoFlush
	}
	if s.idle > 0 {
		// The deadline is the connection's: it is lifted after the
		// write, so that mcp-go's own writes, later, are not cut by it.
		// A writer without deadlines leaves the write unbounded.
		if s.ctl.SetWriteDeadline(time.Now().Add(s.idle)) == nil {
			defer func() { _ = s.ctl.SetWriteDeadline(time.Time{}) }()
		}
	}
	if _, err := s.w.Write(event); err != nil {
		return fmt.Errorf("outbox: writing %s: %w", n.Method, err)
	}
	f.Flush()
	return nil
}

// Close stops Run and waits for it to return: nothing is written to the
// stream after Close returns. What is still queued is not sent. Close may
// be called more than once; only after Run has been started.
func (s *Stream) Close() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
}

// Registry finds the open GET stream of a session. It is safe for
// concurrent use.
type Registry struct {
	mu   sync.Mutex
	open map[string][]*Stream // session id → its open GET streams, oldest first
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{open: map[string][]*Stream{}} }

// Add records s as an open GET stream of session until the returned func
// is called.
func (r *Registry) Add(session string, s *Stream) (remove func()) {
	r.mu.Lock()
	r.open[session] = append(r.open[session], s)
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		left := r.open[session][:0]
		for _, o := range r.open[session] {
			if o != s {
				left = append(left, o)
			}
		}
		if len(left) == 0 {
			delete(r.open, session)
			return
		}
		r.open[session] = left
	}
}

// Of returns the GET stream of session opened last and still open, or nil.
// A client that opens a second stream has abandoned the first, or will.
func (r *Registry) Of(session string) *Stream {
	r.mu.Lock()
	defer r.mu.Unlock()
	open := r.open[session]
	if len(open) == 0 {
		return nil
	}
	return open[len(open)-1]
}

type ctxKey struct{}

// NewContext returns ctx carrying s, the stream of the subscriptions/listen
// request ctx serves.
func NewContext(ctx context.Context, s *Stream) context.Context {
	return context.WithValue(ctx, ctxKey{}, s)
}

// FromContext returns the Stream NewContext put in ctx, or nil.
func FromContext(ctx context.Context) *Stream {
	s, _ := ctx.Value(ctxKey{}).(*Stream)
	return s
}
