package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/outbox"
)

// lockedRecorder is a ResponseRecorder whose body may be read while
// the Stream writes to it.
type lockedRecorder struct {
	mu sync.Mutex
	*httptest.ResponseRecorder
}

func (r *lockedRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ResponseRecorder.Write(p)
}

func (r *lockedRecorder) body() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Body.String()
}

func note(i int) mcp.JSONRPCNotification {
	return mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: "notifications/resources/updated",
		Params: mcp.NotificationParams{Meta: map[string]any{"revision": i}},
	}}
}

// events returns the data of every SSE event in body, checking that each
// is whole.
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "event: message\ndata: ")
		if !ok || !json.Valid([]byte(data)) {
			t.Fatalf("torn event %q", ev)
		}
		out = append(out, data)
	}
	return out
}

// TestStream: nothing is written before the first flush (mcp-go's
// headers), then what was Put goes out in order, each event whole
// between the writer's own; a full queue refuses; nothing is written
// after Close.
func TestStream(t *testing.T) {
	rec := &lockedRecorder{ResponseRecorder: httptest.NewRecorder()}
	s := outbox.New(rec, 0)
	ctx := context.Background()
	go s.Run(ctx)
	const n = 200
	for i := range n {
		if !s.Put(note(i)) {
			t.Fatalf("Put %d refused below the queue's length", i)
		}
	}
	if rec.body() != "" {
		t.Fatalf("written before the first flush: %q", rec.body())
	}
	s.WriteHeader(200)
	s.Flush()
	// The stream's own events, written meanwhile, stay whole.
	own := 0
	for range 50 {
		fmt.Fprintf(s, "event: message\ndata: {\"own\":%d}\n\n", own)
		own++
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(rec.body(), "\n\n") < n+own {
		if time.Now().After(deadline) {
			t.Fatal("the queue was not written within 10s")
		}
		time.Sleep(time.Millisecond)
	}
	next := 0
	for _, data := range events(t, rec.body()) {
		if strings.Contains(data, "own") {
			continue
		}
		var got mcp.JSONRPCNotification
		if err := json.Unmarshal([]byte(data), &got); err != nil {
			t.Fatal(err)
		}
		if got.Params.Meta["revision"] != float64(next) {
			t.Fatalf("event %d is %v", next, got.Params.Meta)
		}
		next++
	}
	s.Close()
	written := rec.body()
	for i := range outbox.QueueLen {
		if !s.Put(note(i)) {
			break
		}
	}
	if s.Put(note(0)) {
		t.Error("Put accepted more than the queue holds")
	}
	if rec.body() != written {
		t.Error("written after Close")
	}
}

// TestRegistry: a session's newest open stream is the one notified.
func TestRegistry(t *testing.T) {
	r := outbox.NewRegistry()
	a, b := outbox.New(httptest.NewRecorder(), 0), outbox.New(httptest.NewRecorder(), 0)
	if r.Of("s") != nil {
		t.Fatal("a stream for a session that opened none")
	}
	removeA := r.Add("s", a)
	removeB := r.Add("s", b)
	if r.Of("s") != b {
		t.Fatal("not the newest stream")
	}
	removeB()
	if r.Of("s") != a {
		t.Fatal("not the stream still open")
	}
	removeA()
	if r.Of("s") != nil {
		t.Fatal("a stream after all closed")
	}
}
