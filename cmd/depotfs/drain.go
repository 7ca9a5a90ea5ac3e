package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/depotfs/depotfs/mcpserver"
)

// drain refuses new HTTP requests once a shutdown has begun and lets the
// ones in flight finish: stop makes every later request get 503 with a
// JSON-RPC error saying depotfs is shutting down (Retry-After, and the
// connection closed after it), and wait returns when the requests admitted
// before have all returned. It is safe for concurrent use.
type drain struct {
	mu       sync.Mutex
	inFlight int
	stopping bool
	idle     chan struct{} // closed once stopping and nothing is in flight
}

func newDrain() *drain { return &drain{idle: make(chan struct{})} }

// handler serves h while depotfs is running and refuses requests once stop
// was called.
func (d *drain) handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.enter() {
			refuseShuttingDown(w)
			return
		}
		defer d.leave()
		h.ServeHTTP(w, r)
	})
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

// stop refuses every request from now on; it is idempotent.
func (d *drain) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping {
		return
	}
	d.stopping = true
	if d.inFlight == 0 {
		close(d.idle)
	}
}

// pending returns how many requests are in flight.
func (d *drain) pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.inFlight
}

// wait returns nil once stop was called and every request admitted before
// it has returned, or an error naming how many are left when ctx ends.
func (d *drain) wait(ctx context.Context) error {
	select {
	case <-d.idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d request(s) still in flight: %w", d.pending(), ctx.Err())
	}
}

// refuseShuttingDown answers a request that arrived after the shutdown
// began: 503, a JSON-RPC error an MCP client shows as it is, and the
// connection closed after the reply.
func refuseShuttingDown(w http.ResponseWriter) {
	body := mcpserver.ShuttingDownReply(nil)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Retry-After", "5")
	h.Set("Connection", "close")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(body)
}
