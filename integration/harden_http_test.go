package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// hostOf returns host:port of an MCP URL.
func hostOf(t testing.TB, u string) string {
	t.Helper()
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return pu.Host
}

// stallingBody yields n bytes of a JSON string and then blocks until
// ctx ends: a client that declared a body and stopped sending it.
type stallingBody struct {
	ctx  context.Context
	sent bool
}

func (b *stallingBody) Read(p []byte) (int, error) {
	if !b.sent {
		b.sent = true
		return copy(p, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_file","arguments":{"path":"/x","content":"`), nil
	}
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// TestOversizedBodyRefused: a declared Content-Length
// over the limit is answered 413 before the body is read, with a JSON-RPC
// error naming the limit, and a burst of refusals is audited once.
func TestOversizedBodyRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	rc := newRawClient(t, d.url)
	const declared = 100 << 20
	for i := range 5 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.url, &stallingBody{ctx: ctx})
		req.ContentLength = declared
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", rc.session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("request %d: %v (after %v; the server read the body instead of refusing it)", i, err, time.Since(start))
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		var r rpcReply
		if resp.StatusCode != http.StatusRequestEntityTooLarge || json.Unmarshal(body, &r) != nil || r.Error == nil || !strings.Contains(r.Error.Message, "over the limit of") {
			t.Fatalf("request %d: status %d %s; want 413 with a JSON-RPC error naming the limit", i, resp.StatusCode, body)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("request %d refused after %v; want before the body is read", i, took)
		}
	}
	d.stop()
	n := 0
	for _, r := range auditRecords(t, d.auditLog()) {
		if strings.Contains(r.Reason, "over the limit of") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d audit records for a burst of 5 oversized bodies; want 1", n)
	}
}

// TestStalledConnections: a connection that says
// nothing, and one that stops sending its body, are closed within the
// timeouts; a client cannot open more than --max-conns-per-addr.
func TestStalledConnections(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{
		"--http-read-header-timeout", "2s", "--http-body-idle-timeout", "2s", "--max-conns-per-addr", "8"}})
	addr := hostOf(t, d.url)
	// closedWithin reports how long the server kept c open.
	closedWithin := func(c net.Conn, limit time.Duration) time.Duration {
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(limit))
		_, err := io.Copy(io.Discard, c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection still open after %v", limit)
		}
		return time.Since(start)
	}
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if took := closedWithin(silent, 20*time.Second); took > 5*time.Second {
		t.Errorf("a silent connection lived %v; want about 2s", took)
	}
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	fmt.Fprintf(stalled, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":", addr)
	if took := closedWithin(stalled, 20*time.Second); took > 5*time.Second {
		t.Errorf("a stalled body lived %v; want about 2s", took)
	}

	// A raw upload (PUT to the URL of guide_begin_upload, no body limit)
	// that stalls is cut too.
	u := beginUpload(t, d, map[string]any{"path": "/stalled.bin", "size": 1 << 20, "sha256": strings.Repeat("0", 64)})
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	put, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer put.Close()
	fmt.Fprintf(put, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\nabc", pu.RequestURI(), addr, 1<<20)
	if took := closedWithin(put, 20*time.Second); took > 5*time.Second {
		t.Errorf("a stalled raw upload lived %v; want about 2s", took)
	}

	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	extra, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	// Closed, and by the limit: the header timeout (2 s) would close it
	// too, so the evidence is the refusal's log line, not how soon.
	closedWithin(extra, 10*time.Second)
	d.waitLogLine("the refusal of the 9th connection", "connection refused: too many from one address", "limit=8")
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	// Once those are gone, new connections work again.
	waitFor(t, 10*time.Second, "a call after the connections closed", func() bool {
		_, err := d.tryCall("guide_cache_stats", map[string]any{})
		return err == nil
	})
}

// TestInflightBytesBounded: requests wait for room in
// --max-inflight-bytes before their bodies are read, and one that waits
// too long gets a retryable 503; concurrent calls within the budget all
// succeed.
func TestInflightBytesBounded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-inflight-bytes", "16MiB", "--inflight-wait", "1s"}})
	rc := newRawClient(t, d.url)
	// A 4 MiB body (charged 24 MiB, the whole budget) that stalls holds
	// the budget; the next large request waits and is refused.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.url, &stallingBody{ctx: ctx})
		req.ContentLength = 4 << 20
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", rc.session)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	time.Sleep(300 * time.Millisecond) // let the stalled request take the budget first
	content := strings.Repeat("a", 2<<20)
	start := time.Now()
	st, r := rc.call(7, "guide_cache_file", fmt.Sprintf(`{"path":"/big.txt","content":%q}`, content))
	if st != http.StatusServiceUnavailable || r.Error == nil || !strings.Contains(string(r.raw), `"retryable":true`) {
		t.Fatalf("a large call while the budget is held: status %d %.300s; want 503 retryable", st, r.raw)
	}
	if took := time.Since(start); took < 900*time.Millisecond {
		t.Errorf("refused after %v; want after --inflight-wait (1s)", took)
	}
	// Small calls never wait.
	d.mustCall("guide_cache_stats", map[string]any{})
	cancel()
	// With the default wait, 8 concurrent 2 MiB calls all succeed: they
	// take turns in the same 16 MiB.
	d = startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-inflight-bytes", "16MiB"}})
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newRawClient(t, d.url)
			c.hc.Timeout = 2 * time.Minute
			st, r := c.call(i, "guide_cache_file", fmt.Sprintf(`{"path":"/c/%d.txt","content":%q}`, i, content))
			if st != http.StatusOK || r.Result == nil || r.Result.IsError {
				errs <- fmt.Sprintf("call %d: status %d %.200s", i, st, r.raw)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestBatchRefused: a JSON-RPC batch is answered
// -32600 (invalid request), not -32700 (parse error).
func TestBatchRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	rc := newRawClient(t, d.url)
	st, b, _ := rc.post([]byte(` [{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	var r rpcReply
	if err := json.Unmarshal(b, &r); err != nil || r.Error == nil || r.Error.Code != -32600 {
		t.Fatalf("batch: status %d %s; want JSON-RPC error -32600", st, b)
	}
}

// TestSessionIdleTimeout: a session unused for
// --session-idle-timeout is dropped and its id answered 404; live sessions
// are capped by --max-sessions, the least recently used idle one ending
// for a new one.
func TestSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--session-idle-timeout", "2s", "--max-sessions", "3"}})
	rc := newRawClient(t, d.url)
	if st, _ := rc.call(1, "guide_cache_stats", "{}"); st != http.StatusOK {
		t.Fatalf("a call on a fresh session: status %d", st)
	}
	waitFor(t, 15*time.Second, "the idle session to be dropped", func() bool {
		st, _, _ := rc.post([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
		if st == http.StatusNotFound {
			return true
		}
		time.Sleep(2500 * time.Millisecond) // stay idle past the timeout
		return false
	})
	// The cap: the idle sessions were all dropped (the daemon's own
	// client's too); three new ones fit, and a fourth ends the least
	// recently used idle one (404 from then on) instead of being refused.
	first := newRawClient(t, d.url)
	for range 2 {
		newRawClient(t, d.url)
	}
	c := &rawClient{t: t, url: d.url, hc: http.DefaultClient}
	st, b, _ := c.post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	if st != http.StatusOK {
		t.Fatalf("a session beyond --max-sessions with idle ones: status %d %s; want 200", st, b)
	}
	if st, _, _ := first.post([]byte(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)); st != http.StatusNotFound {
		t.Fatalf("the least recently used session, ended for a new one: status %d; want 404", st)
	}
}

// TestRevocationEndsStreams: after "depotfs token
// revoke", or "depotfs ca revoke" (the server re-reads the CRL), the
// revoked agent's open notification stream ends within a couple of
// seconds, and the audit log records it.
func TestRevocationEndsStreams(t *testing.T) {
	t.Parallel()
	t.Run("token", func(t *testing.T) {
		tokens := t.TempDir() + "/tokens.json"
		tok, id := issueToken(t, tokens, "watcher", "*:/:rw")
		d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})
		revocationEndsStream(t, d, &http.Client{Transport: bearerTransport{tok}},
			func() { depotfsCommand(t, "token", "revoke", "--tokens", tokens, id) },
			func(r audit.Record) bool { return r.TokenID == id })
	})
	t.Run("certificate", func(t *testing.T) {
		p := newPKI(t)
		agent := p.issue("watcher", "*:/:rw")
		d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: agent})
		serial := agent.serial(t)
		revocationEndsStream(t, d, &http.Client{Transport: d.newClient(agent)},
			func() { p.revoke(agent) },
			func(r audit.Record) bool { return r.Serial == serial })
	})
}

// revocationEndsStream opens a session and its GET stream through hc,
// runs revoke, and checks that the stream ends (within 10 s) and that an
// audit record (matching credential) says so.
func revocationEndsStream(t *testing.T, d *daemon, hc *http.Client, revoke func(), credential func(audit.Record) bool) {
	t.Helper()
	rc := newRawClientWith(t, d.url, hc)
	req, _ := http.NewRequest(http.MethodGet, d.url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", rc.session)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		br := bufio.NewReader(resp.Body)
		for {
			if _, err := br.ReadString('\n'); err != nil {
				ended <- time.Now()
				return
			}
		}
	}()
	revoked := time.Now()
	revoke()
	// How soon is the machine's load as much as the server's: the
	// evidence that the revocation ended the stream is the audit record
	// below, and a stream still open 10 s later fails.
	select {
	case at := <-ended:
		t.Logf("the stream ended %v after the revocation", at.Sub(revoked).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatal("the revoked credential's stream was still open 10s after the revocation")
	}
	d.stop()
	found := false
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Stage == "revoked" && credential(r) && strings.Contains(r.Reason, "notification stream") {
			found = true
		}
	}
	if !found {
		t.Error("no audit record of the ended stream")
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
