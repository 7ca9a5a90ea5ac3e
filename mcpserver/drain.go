package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// drain is the one shutdown of both transports: once stop is called, an
// HTTP request (through Server.Admit) gets 503 with ShuttingDownReply
// (Retry-After, and the connection closed after it) and the stdio
// transport answers every request it reads with the same reply (its gate
// is shut by the callbacks registered with onStop); wait returns when the
// HTTP requests admitted before have all returned (ServeStdio itself
// returns once its calls in flight have replied). It is safe for
// concurrent use.
type drain struct {
	mu       sync.Mutex
	inFlight int
	stopping bool
	idle     chan struct{}   // closed once stopping and nothing is in flight
	stops    map[*int]func() // called once by stop; keyed for removal
}

func newDrain() *drain { return &drain{idle: make(chan struct{}), stops: map[*int]func(){}} }

// onStop registers fn to be called when stop is (at once if it was) and
// returns the function that unregisters it.
func (d *drain) onStop(fn func()) (unregister func()) {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		fn()
		return func() {}
	}
	key := new(int)
	d.stops[key] = fn
	d.mu.Unlock()
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.stops, key)
	}
}

func (d *drain) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return false
	}
	d.inFlight++
	return true
}

func (d *drain) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inFlight--
	if d.stopping && d.inFlight == 0 {
		close(d.idle)
	}
}

// stop refuses every request from now on, on both transports; it is
// idempotent.
func (d *drain) stop() {
	d.mu.Lock()
	if d.stopping {
		d.mu.Unlock()
		return
	}
	d.stopping = true
	if d.inFlight == 0 {
		close(d.idle)
	}
	stops := d.stops
	d.stops = nil
	d.mu.Unlock()
	for _, fn := range stops {
		fn()
	}
}

// state returns how many requests are in flight, and whether stop was
// called.
func (d *drain) state() (inFlight int, stopped bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight, d.stopping
}

// wait returns nil once stop was called and every request admitted before
// it has returned, or an error naming how many are left when ctx ends.
func (d *drain) wait(ctx context.Context) error {
	select {
	case <-d.idle:
		return nil
	case <-ctx.Done():
		n, _ := d.state()
		return fmt.Errorf("%d request(s) still in flight: %w", n, ctx.Err())
	}
}

// refuseShuttingDown answers a request that arrived after the shutdown
// began: 503, a JSON-RPC error an MCP client shows as it is, and the
// connection closed after the reply.
func refuseShuttingDown(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusServiceUnavailable, ShuttingDownReply(nil))
}

// Admit wraps h, a handler that serves this Server's HTTP transport (with
// any middleware around Handler), so that its requests count as in flight
// for Shutdown and, once the shutdown has begun, are refused with 503 and
// ShuttingDownReply before h sees them. depotfs serve admits /mcp and
// /upload/ through it. It is safe for concurrent use.
func (s *Server) Admit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.drain.enter() {
			refuseShuttingDown(w)
			return
		}
		defer s.drain.leave()
		h.ServeHTTP(w, r)
	})
}

// BeginShutdown starts the shutdown of both transports and returns at
// once: from now on an HTTP request through Admit gets a 503 and
// ShuttingDownReply, and ServeStdio answers every request it reads with
// that reply (calls already running finish and reply). It is idempotent
// and safe to call from any goroutine.
func (s *Server) BeginShutdown() { s.drain.stop() }

// Shutdown begins the shutdown (BeginShutdown) and waits until the HTTP
// requests admitted before it have returned, or ctx ends, with an error
// naming how many are left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.drain.stop()
	return s.drain.wait(ctx)
}

// InFlight returns how many HTTP requests admitted through Admit are in
// flight.
func (s *Server) InFlight() int {
	n, _ := s.drain.state()
	return n
}
