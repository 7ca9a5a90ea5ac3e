package mcpserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// A subscriptions/listen stream must start with its acknowledgement
// (notifications/subscriptions/acknowledged); the 2026-07-28 transport
// requires it first. mcp-go (v1.2.1) queues the acknowledgement for the
// goroutine that writes a request's notifications, and a listen that ends
// at once (nothing the client asked for is served, e.g. tools/list_changed,
// which depotfs does not send) can write its response while that goroutine
// is still waiting for the writer: it then finds the request done and drops
// the acknowledgement. About one such listen in four lost it on an idle
// machine. The acknowledgement is held first here: listenAckWriter notes
// the stream's first flush, and the hook that runs as the listen returns,
// before mcp-go writes the response, waits for it.

// listenAckWait bounds that wait: a writer that cannot stream never
// flushes, and mcp-go then drops every notification anyway.
const listenAckWait = 5 * time.Second

type listenAckKey struct{}

// listenAckWriter is the writer of a subscriptions/listen request: flushed
// is closed after its first flush, which carries the acknowledgement.
type listenAckWriter struct {
	http.ResponseWriter
	once    sync.Once
	flushed chan struct{}
}

// withListenAck wraps w and r's context for a subscriptions/listen request.
// A writer that cannot flush is left alone: mcp-go does not stream to it.
func withListenAck(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get(mcp.HeaderMethod) != string(mcp.MethodSubscriptionsListen) {
		return w, r
	}
	if _, ok := w.(http.Flusher); !ok {
		return w, r
	}
	aw := &listenAckWriter{ResponseWriter: w, flushed: make(chan struct{})}
	return aw, r.WithContext(context.WithValue(r.Context(), listenAckKey{}, aw.flushed))
}

// Flush sends what was written and records the first flush.
func (w *listenAckWriter) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	w.once.Do(func() { close(w.flushed) })
}

// Unwrap gives http.ResponseController the writer underneath.
func (w *listenAckWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// holdListenResponse is the hook run as a subscriptions/listen returns: it
// waits until the acknowledgement has been flushed, the request has ended,
// or listenAckWait has passed.
func holdListenResponse(ctx context.Context, _ any, _ *mcp.SubscriptionsListenRequest, _ *mcp.SubscriptionsListenResult) {
	flushed, ok := ctx.Value(listenAckKey{}).(chan struct{})
	if !ok {
		return
	}
	t := time.NewTimer(listenAckWait)
	defer t.Stop()
	select {
	case <-flushed:
	case <-ctx.Done():
	case <-t.C:
	}
}
