package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// TestBudget: acquisitions that fit pass at once, others wait in order
// and are granted on release; a wait that outlasts its limit, or whose
// client has gone, fails and takes nothing; a request larger than the
// budget waits for all of it.
func TestBudget(t *testing.T) {
	b := newBudget(100)
	ctx := context.Background()
	if err := b.acquire(ctx, 60, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.acquire(ctx, 60, 20*time.Millisecond); err == nil {
		t.Fatal("60 more bytes fit in a budget of 100 holding 60")
	}
	got := make(chan error, 1)
	go func() { got <- b.acquire(ctx, 500, 5*time.Second) }() // more than the budget: all of it
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-got:
		t.Fatalf("granted while the budget was held: %v", err)
	default:
	}
	b.release(60)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if b.sem.TryAcquire(1) {
		t.Fatal("the budget had room after granting an oversized request; want it all taken")
	}
	b.release(500)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.acquire(cctx, 10, time.Second); err == nil {
		t.Fatal("a request whose client has gone was granted")
	}
	if !b.sem.TryAcquire(100) {
		t.Fatal("budget not back to empty")
	}
}

// newTestSessions is a sessions with a clock the test moves, and a
// record of the ids it asked mcp-go to end.
func newTestSessions(max, perOwner int) (*sessions, *[]string, *time.Time) {
	m := newSessions(max, perOwner)
	var ended []string
	now := time.Unix(1e9, 0)
	m.now = func() time.Time { now = now.Add(time.Second); return now }
	m.end = func(ids []string) { ended = append(ended, ids...) }
	return m, &ended, &now
}

// tokenOf is the identity of the token name, granted a prefix of its
// own: each name is a tenant of its own.
func tokenOf(name string) identity.Identity {
	return identity.Identity{Transport: "http", Method: identity.MethodToken, TokenID: name, Subject: "depotfs://local/token/" + name,
		Grants: []grant.Grant{{Tool: grant.AnyTool, Prefix: "/" + name, Access: grant.ReadWrite}}}
}

// openSession opens a session of the token name as the handler and
// mcp-go do: a reservation, Generate through the request, the request's
// end.
func openSession(t *testing.T, m *sessions, name string) (string, error) {
	t.Helper()
	tk, err := m.reserve(sessionOwner(tokenOf(name)))
	if err != nil {
		return "", err
	}
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	ctx := identity.NewContext(r.Context(), tokenOf(name))
	r = r.WithContext(context.WithValue(ctx, ticketKey{}, tk))
	id := m.ResolveSessionIdManager(r).Generate()
	m.settle(tk, id)
	return id, nil
}

// TestSessionsEvictIdle: an owner at its cap ends its own least recently
// used idle session, never another's and never a busy one; it is refused
// only when all of its sessions are busy. The server's cap does the same
// over all sessions. Dropped ids are "terminated" (404), and mcp-go is
// told to end them.
func TestSessionsEvictIdle(t *testing.T) {
	m, ended, _ := newTestSessions(4, 2)
	alice, bob, carol := "alice", "bob", "carol"
	a1, _ := openSession(t, m, alice)
	a2, _ := openSession(t, m, alice)
	if a1 == a2 || !strings.HasPrefix(a1, sessionPrefix) {
		t.Fatalf("ids %q %q", a1, a2)
	}
	b1, _ := openSession(t, m, bob)
	done := m.enter(a2) // a request in flight on a2; then a1 was used last
	m.enter(a1)()
	a3, err := openSession(t, m, alice)
	if err != nil {
		t.Fatalf("alice's third session with an idle one: %v", err)
	}
	if held, _ := m.count(sessionOwner(tokenOf(alice))); held != 2 {
		t.Fatalf("alice holds %d; want her cap, 2", held)
	}
	if term, err := m.Validate(a1); !term || err != nil {
		t.Fatalf("Validate(a1, alice's idle session) = %v, %v; want terminated", term, err)
	}
	if term, err := m.Validate(a2); term || err != nil {
		t.Fatalf("Validate(a2, busy) = %v, %v; want live", term, err)
	}
	if !slices.Equal(*ended, []string{a1}) {
		t.Fatalf("ended %v; want [a1]", *ended)
	}
	stop := m.enter(a3)
	if _, err := openSession(t, m, alice); !errors.Is(err, errIdentitySessionsFull) {
		t.Fatalf("alice's session with both busy: %v; want her limit", err)
	}
	if held, _ := m.count(sessionOwner(tokenOf(alice))); held != 2 || m.pending != 0 {
		t.Fatalf("alice holds %d, %d pending, after a refusal", held, m.pending)
	}
	stop()
	done()
	// The server's cap: 4 live (a2, a3, b1, b2); carol's first ends the
	// server's least recently used idle one, b1.
	b2, _ := openSession(t, m, bob)
	c1, err := openSession(t, m, carol)
	if err != nil {
		t.Fatalf("carol at the server's cap with idle sessions: %v", err)
	}
	if term, _ := m.Validate(b1); !term {
		t.Fatal("b1, the server's least recently used, is still live")
	}
	if len(m.live) != 4 {
		t.Fatalf("%d live; want the cap, 4", len(m.live))
	}
	for _, id := range []string{a2, a3, b2, c1} {
		defer m.enter(id)()
	}
	if _, err := openSession(t, m, "dave"); !errors.Is(err, errSessionsFull) {
		t.Fatalf("dave with every session busy: %v; want the server's limit", err)
	}
}

// TestSessionsCountUnreserved: a session mcp-go creates without a
// reservation is counted all the same, and the caps hold by eviction.
func TestSessionsCountUnreserved(t *testing.T) {
	m, _, _ := newTestSessions(100, 3)
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r = r.WithContext(identity.NewContext(r.Context(), tokenOf("x")))
	for range 10 {
		m.ResolveSessionIdManager(r).Generate()
	}
	if n := len(m.live); n != 3 {
		t.Fatalf("%d live after 10 unreserved sessions of one owner; want its cap, 3", n)
	}
	if _, err := m.Validate("depotfs-session-unknown"); err == nil {
		t.Fatal("an unknown id validated")
	}
}

// TestSessionCredentialKeepsNoBody: what a session keeps of the request
// that opened it is its credential, not its body.
func TestSessionCredentialKeepsNoBody(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat("x", 1<<20)))
	r.Header.Set("Authorization", "Bearer t")
	r.Header.Set("X-Other", "y")
	c := credentialOf(r)
	if c.req.Body != nil || c.req.Header.Get("Authorization") != "Bearer t" || c.req.Header.Get("X-Other") != "" {
		t.Fatalf("credential request: body %v, header %v; want no body and only Authorization", c.req.Body, c.req.Header)
	}
}

// TestOpensSession: the body is parsed as mcp-go parses it, whatever the
// spelling of the method.
func TestOpensSession(t *testing.T) {
	pad := strings.Repeat(" ", 600)
	for body, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`:                                                                 true,
		`{"jsonrpc":"2.0","id":0,"method":"\u0069nitialize","params":{}}`:                                                            true,
		`{"jsonrpc":"2.0","id":0,"method" : "initialize"}`:                                                                           true,
		`{"jsonrpc":"2.0","id":0,"params":{"x":"` + pad + `"},"method":"initialize"}`:                                                true,
		`{"jsonrpc":"2.0","id":0,"method":"tools/list","method":"initialize"}`:                                                       true,
		`{"jsonrpc":"2.0","id":0,"METHOD":"initialize"}`:                                                                             true,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","method":"tools/list"}`:                                                       false,
		`{"jsonrpc":"2.0","id":0,"method":"tools/list"}`:                                                                             false,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`: false,
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"clientInfo":{"name":"x`:                                            false,
	} {
		if got := opensSession(http.Header{}, []byte(body)); got != want {
			t.Errorf("opensSession(%.80s) = %v, want %v", body, got, want)
		}
	}
}

// FuzzMayName: a body whose method encoding/json reads as initialize, or
// as a notification's, is never one mayName rules out, whatever its
// spelling (escapes, case of the key, duplicates), so the shortcut never
// changes what opensSession and protocolEdge decide.
func FuzzMayName(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","id":0,"method":"\u0069nitialize"}`,
		`{"jsonrpc":"2.0","METHOD":"notifications\/cancelled"}`,
		`{"jsonrpc":"2.0","method":"notific\u0061tions/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_file","arguments":{"content":"initialize"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_file","arguments":{"content":"\\u0041"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) != nil {
			return
		}
		if msg.Method == "initialize" && !mayName(body, "initialize") {
			t.Fatalf("mayName(%q, initialize) = false for method %q", body, msg.Method)
		}
		if strings.HasPrefix(msg.Method, "notifications") && !mayName(body, "notifications") {
			t.Fatalf("mayName(%q, notifications) = false for method %q", body, msg.Method)
		}
	})
}

// TestOpensSessionSkipsContent: a tool call is not an initialize, with or
// without the word in its content, and an initialize with escapes still is.
func TestOpensSessionSkipsContent(t *testing.T) {
	call := func(content string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_file","arguments":{"path":"/a","content":"` + content + `"}}}`)
	}
	for _, body := range [][]byte{call(strings.Repeat("x", 2000)), call("initialize " + strings.Repeat("x", 2000)), call(`\u0069nitialize`)} {
		if opensSession(http.Header{}, body) {
			t.Errorf("opensSession(%.60s...) = true for a tool call", body)
		}
	}
	if mayName(call(strings.Repeat("x", 2000)), "initialize") {
		t.Error("mayName found initialize in a body without it")
	}
	if !opensSession(http.Header{}, []byte(`{"jsonrpc":"2.0","id":0,"method":"init\u0069alize","params":{}}`)) {
		t.Error("an initialize spelled with an escape no longer opens a session")
	}
}

// BenchmarkOpensSession: what telling a session's opening from a tool call
// of a push costs each POST, for a call with a 1.5 KiB file.
func BenchmarkOpensSession(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"guide_cache_file","arguments":{"path":"/bench/d1/f1.txt","content":"` +
		strings.Repeat("QUJD", 384) + `"}}}`)
	for b.Loop() {
		if opensSession(http.Header{}, body) {
			b.Fatal("a tool call opens a session")
		}
	}
}
