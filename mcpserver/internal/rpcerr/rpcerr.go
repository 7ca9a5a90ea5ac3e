// Package rpcerr replaces JSON-RPC error responses on their way out of
// mcp-go with errors depotfs chooses. mcp-go v1.2.1 answers every error of
// a resource handler with -32603 (internal error) and a URI no resource
// template matches with -32002 or -32602 without error data, and offers
// no way to pick the code or add data; SEP-2164 asks for -32602 with
// data.uri when a resource is not found. An error hook records the error a
// request is to get (Set) in the Fixes of the request's context; the
// transport's writer, wrapped by Fixes.Writer or Fixes.ResponseWriter,
// swaps it in for mcp-go's error response with the same id.
package rpcerr

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// Fixes holds the replacement errors of the requests of one transport
// stream: a stdio connection, or one HTTP request. It is safe for
// concurrent use.
type Fixes struct {
	pending atomic.Int32 // len(byID), read without the lock on every write
	mu      sync.Mutex
	byID    map[string]mcp.JSONRPCErrorDetails
}

// New returns an empty Fixes.
func New() *Fixes { return &Fixes{byID: map[string]mcp.JSONRPCErrorDetails{}} }

type ctxKey struct{}

// NewContext returns ctx carrying f, where Set finds it.
func NewContext(ctx context.Context, f *Fixes) context.Context {
	return context.WithValue(ctx, ctxKey{}, f)
}

// Set records that the error response to the request id (as mcp-go
// decoded it) is to be sent as details. It does nothing if ctx carries no
// Fixes, and the recorded error is used only if mcp-go answers the request
// with an error.
func Set(ctx context.Context, id any, details mcp.JSONRPCErrorDetails) {
	f, ok := ctx.Value(ctxKey{}).(*Fixes)
	if !ok {
		return
	}
	key, ok := idKey(id)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.byID[key]; !dup {
		f.pending.Add(1)
	}
	f.byID[key] = details
}

// idKey is the JSON of a request id decoded into an any, the same for the
// id of a request and of its response.
func idKey(id any) (string, bool) {
	if id == nil {
		return "", false
	}
	b, err := json.Marshal(id)
	return string(b), err == nil
}

// fix returns the replacement of msg, one JSON-RPC message, if msg is an
// error response to a request with a recorded error.
func (f *Fixes) fix(msg []byte) ([]byte, bool) {
	if f.pending.Load() == 0 || !bytes.Contains(msg, []byte(`"error"`)) {
		return nil, false
	}
	var resp struct {
		ID    any             `json:"id"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &resp) != nil || resp.Error == nil {
		return nil, false
	}
	key, ok := idKey(resp.ID)
	if !ok {
		return nil, false
	}
	f.mu.Lock()
	details, ok := f.byID[key]
	if ok {
		delete(f.byID, key)
		f.pending.Add(-1)
	}
	f.mu.Unlock()
	if !ok {
		return nil, false
	}
	out, err := json.Marshal(mcp.JSONRPCError{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(resp.ID), Error: details})
	return out, err == nil
}

// Writer returns w, for newline-delimited JSON-RPC (the stdio transport,
// which writes each message with its newline in one Write), with recorded
// errors swapped in.
func (f *Fixes) Writer(w io.Writer) io.Writer { return lineWriter{f: f, w: w} }

type lineWriter struct {
	f *Fixes
	w io.Writer
}

func (l lineWriter) Write(p []byte) (int, error) { return l.f.write(l.w, p) }

// sseEvent is how mcp-go writes a message as a server-sent event, in one
// Write.
var sseEvent = []byte("event: message\ndata: ")

// write writes p, one message as a transport writes it (a line of JSON,
// or a server-sent event), to w, with a recorded error swapped in.
func (f *Fixes) write(w io.Writer, p []byte) (int, error) {
	prefix, suffix, msg := []byte{}, []byte("\n"), p
	if body, ok := bytes.CutPrefix(p, sseEvent); ok {
		prefix, suffix, msg = sseEvent, []byte("\n\n"), body
	}
	body, ok := bytes.CutSuffix(msg, suffix)
	if !ok {
		return w.Write(p)
	}
	out, ok := f.fix(body)
	if !ok {
		return w.Write(p)
	}
	if _, err := w.Write(append(append(append([]byte{}, prefix...), out...), suffix...)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// ResponseWriter returns w with recorded errors swapped in, in a response
// of the streamable HTTP transport: a JSON body (written in one Write by a
// json.Encoder) or server-sent events (one Write each). It flushes as w
// does, and http.ResponseController reaches w through its Unwrap.
func (f *Fixes) ResponseWriter(w http.ResponseWriter) http.ResponseWriter {
	return responseWriter{ResponseWriter: w, f: f}
}

type responseWriter struct {
	http.ResponseWriter
	f *Fixes
}

func (w responseWriter) Write(p []byte) (int, error) { return w.f.write(w.ResponseWriter, p) }

// Flush flushes the underlying writer if it can.
func (w responseWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
