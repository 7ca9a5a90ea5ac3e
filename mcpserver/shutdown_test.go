package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestServeStdioRefusesAfterShutdown: once ServeStdio's context ends, every
// request read from the client is answered with the "shutting down"
// error, its id echoed whatever its type; notifications get nothing; the
// answers go on while the drain runs, and ServeStdio returns only after
// it.
func TestServeStdioRefusesAfterShutdown(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, nil)
	in, inW := pipe(t)
	outR, out := pipe(t)
	replies := readLines(outR)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	draining, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- srv.ServeStdioDrain(ctx, in, out, func() {
			close(draining)
			<-release
		})
	}()

	send := func(line string) {
		t.Helper()
		errc := make(chan error, 1)
		go func() { _, err := io.WriteString(inW, line+"\n"); errc <- err }()
		select {
		case err := <-errc:
			if err != nil {
				t.Fatalf("send %s: %v", line, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("ServeStdioDrain did not read %s within 10s", line)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r := readReply(t, replies); string(r.ID) != "1" || r.Result == nil {
		t.Fatalf("initialize: %+v", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	cancel()
	select {
	case <-draining:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdioDrain did not begin its drain 10s after its context ended")
	}
	send(`{"jsonrpc":"2.0","id":"req-2","method":"tools/list"}`)
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"guide_cache_stats","arguments":{}}}`)
	send(`not json`)
	send(`{"jsonrpc":"2.0","id":{"odd":true},"method":"ping"}`)
	// In the order sent; the notification has no answer, the line that is
	// no message one with a null id.
	for _, want := range []string{`"req-2"`, `7`, `null`, `{"odd":true}`} {
		r := readReply(t, replies)
		if string(r.ID) != want || r.Result != nil || r.Error == nil {
			t.Fatalf("a request after the shutdown began: %+v; want an error with id %s", r, want)
		}
		e := r.Error
		if e.Code != mcpserver.CodeShuttingDown || !strings.Contains(e.Message, "depotfs is shutting down") || !e.Data.ShuttingDown || !e.Data.Retryable {
			t.Fatalf("id %s: error %+v; want code %d saying depotfs is shutting down", want, e, mcpserver.CodeShuttingDown)
		}
	}

	select {
	case err := <-done:
		t.Fatalf("ServeStdioDrain returned during its drain: %v", err)
	default:
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("ServeStdioDrain: %v", err)
	}
}

// rpcReply is a JSON-RPC response as the tests read it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			Retryable    bool `json:"retryable"`
			ShuttingDown bool `json:"shutting_down"`
		} `json:"data"`
	} `json:"error"`
}

// readLines reads r line by line on a goroutine of its own (so that a
// writer never waits for the test) until it ends.
func readLines(r io.Reader) <-chan []byte {
	c := make(chan []byte, 64)
	go func() {
		defer close(c)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			c <- line
		}
	}()
	return c
}

// readReply decodes the next line as a JSON-RPC response, failing the
// test if none comes within 10 s.
func readReply(t *testing.T, lines <-chan []byte) rpcReply {
	t.Helper()
	var line []byte
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the output ended")
		}
		line = l
	case <-time.After(10 * time.Second):
		t.Fatal("no reply within 10s")
	}
	var reply rpcReply
	if err := json.Unmarshal(line, &reply); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	return reply
}

// TestOneShutdownForBothTransports: BeginShutdown alone (no context ends)
// refuses HTTP requests admitted through Admit with 503 and the
// "shutting down" error, and makes a running ServeStdioDrain answer its
// next request with the same error (while its drain runs); Shutdown waits
// for an HTTP request admitted before it.
func TestOneShutdownForBothTransports(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, nil)
	in, inW := pipe(t)
	outR, out := pipe(t)
	replies := readLines(outR)
	// ServeStdio stops writing once it returns; the drain keeps it
	// answering, as depotfs serve's wait for the mount does.
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdioDrain(context.Background(), in, out, func() { <-release }) }()

	entered, finish := make(chan struct{}), make(chan struct{})
	h := srv.Admit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(entered)
		<-finish
	}))
	go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	<-entered

	srv.BeginShutdown()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "shutting down") {
		t.Errorf("HTTP after BeginShutdown: %d %s", rec.Code, rec.Body)
	}
	go func() { _, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`+"\n") }()
	if r := readReply(t, replies); string(r.ID) != "7" || r.Error == nil || r.Error.Code != mcpserver.CodeShuttingDown {
		t.Errorf("stdio after BeginShutdown: %+v", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); err == nil || srv.InFlight() != 1 {
		t.Errorf("Shutdown returned %v with a request in flight (%d)", err, srv.InFlight())
	}
	close(finish)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown after the request returned: %v", err)
	}
	close(release)
	inW.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeStdio: %v", err)
	}
}

// A ServeStdio started after the shutdown began, with a request already
// waiting in its input, answers it with the shutting-down error. Under
// load it once hung: the gate took the line and waited to hand it to an
// mcp-go that had not started, while the shutdown, applied at once on
// registration, waited for the gate. The scheduling that shows it is rare
// on an idle machine; the gate is now registered before it reads.
func TestStdioStartedAfterShutdownRefuses(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, nil)
	srv.BeginShutdown()
	in, inW := pipe(t)
	outR, out := pipe(t)
	replies := readLines(outR)
	go func() { _, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`+"\n") }()
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdioDrain(context.Background(), in, out, func() { <-release }) }()
	if r := readReply(t, replies); string(r.ID) != "3" || r.Error == nil || r.Error.Code != mcpserver.CodeShuttingDown {
		t.Errorf("stdio started after BeginShutdown: %+v", r)
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdioDrain: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdioDrain did not return within 10s of its drain")
	}
}
