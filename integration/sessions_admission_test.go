package integration_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionRevision is a protocol revision with sessions (2026-07-28 has
// none, so its clients are never counted).
const sessionRevision = "2025-11-25"

// noDelete is a client transport that never sends a DELETE: it answers
// 200 itself, as a client that ends without ending its session (the
// TypeScript SDK's close(), the MCP Inspector CLIs) leaves the server.
type noDelete struct{ next http.RoundTripper }

func (n noDelete) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r, Header: http.Header{}}, nil
	}
	return n.next.RoundTrip(r)
}

// sdkRun is one short-lived run of the official Go SDK client: connect
// on a revision with sessions, call guide_cache_stats, close without a
// DELETE. It returns the session id and the first error.
func sdkRun(ctx context.Context, url, bearer string) (string, error) {
	var rt http.RoundTripper = &http.Transport{}
	defer rt.(*http.Transport).CloseIdleConnections()
	if bearer != "" {
		rt = bearerOver{bearer, rt}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "depotfs-session-loop", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: noDelete{rt}}}, &sdk.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "guide_cache_stats", Arguments: map[string]any{}})
	if err != nil {
		return cs.ID(), fmt.Errorf("guide_cache_stats: %w", err)
	}
	if res.IsError {
		return cs.ID(), fmt.Errorf("guide_cache_stats failed: %v", res.Content)
	}
	return cs.ID(), nil
}

// bearerOver adds a bearer token to every request sent through next.
type bearerOver struct {
	token string
	next  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// rawSession posts body (an initialize, or not) with an optional bearer
// token and extra headers, and returns the status, the session id and
// the reply. length < 0 sends it without Content-Length.
func rawSession(t testing.TB, url, bearer, body string, length int64, hdr ...string) (int, string, string) {
	t.Helper()
	return rawSessionVia(t, http.DefaultClient, url, bearer, body, length, hdr...)
}

// rawSessionVia is rawSession through hc (a client certificate's, say).
func rawSessionVia(t testing.TB, hc *http.Client, url, bearer, body string, length int64, hdr ...string) (int, string, string) {
	t.Helper()
	var rd io.Reader = strings.NewReader(body)
	if length < 0 {
		rd = io.MultiReader(rd) // hides the length from net/http: chunked
	}
	req, _ := http.NewRequest(http.MethodPost, url, rd)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return 0, "", ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Mcp-Session-Id"), string(b)
}

// pingSession returns the status of a ping on session id: 200 while it
// lives, 404 once it has been ended.
func pingSession(t testing.TB, url, bearer, id string) int {
	t.Helper()
	st, _, _ := rawSession(t, url, bearer, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, -1,
		"Mcp-Session-Id", id, "Mcp-Protocol-Version", "2025-06-18")
	return st
}

// liveSessions reads depotfs_mcp_sessions_live from the daemon's
// /metrics (with bearer when it requires authentication).
func liveSessions(t testing.TB, d *daemon, bearer string) int {
	t.Helper()
	return liveSessionsVia(t, http.DefaultClient, d, bearer)
}

// liveSessionsVia is liveSessions through hc (a client certificate's).
func liveSessionsVia(t testing.TB, hc *http.Client, d *daemon, bearer string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(d.url, "/mcp")+"/metrics", nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "depotfs_mcp_sessions_live "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("depotfs_mcp_sessions_live %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("/metrics: status %d, no depotfs_mcp_sessions_live", res.StatusCode)
	return -1
}

// initBody is an initialize of a revision with sessions.
const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestSessionsHonestClientLoop: the official Go SDK client run many
// times, each run ending without a DELETE (as most clients do), is never
// refused, with or without a token: at its cap an identity's least
// recently used idle session is ended instead, and answers 404 from then
// on. Under DEPOTFS_SOAK=1: 1,000 runs at the default cap.
func TestSessionsHonestClientLoop(t *testing.T) {
	t.Parallel()
	runs, capArgs := bySoak(20, 1000), bySoak([]string{"--max-sessions-per-identity", "4"}, nil)
	limit := bySoak(4, 64)
	for _, auth := range []string{"defaults", "token"} {
		t.Run(auth, func(t *testing.T) {
			t.Parallel()
			// Race-built: sessions opened, evicted and ended at once.
			cfg := daemonConfig{transport: overHTTP, race: true, args: capArgs}
			var tok string
			if auth == "token" {
				tokens := t.TempDir() + "/tokens.json"
				tok, _ = issueToken(t, tokens, "ci-job", "*:/:rw")
				cfg.args = append(slices.Clone(capArgs), "--tokens", tokens)
				cfg.client = clientAuth{bearer: tok}
			}
			d := startDaemon(t, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			var ids []string
			refused := 0
			for i := range runs {
				id, err := sdkRun(ctx, d.url, tok)
				if err != nil {
					refused++
					if refused == 1 {
						t.Errorf("run %d of %d refused: %v", i+1, runs, err)
					}
				}
				ids = append(ids, id)
			}
			t.Logf("%s: %d runs of the Go SDK client without DELETE, %d refused, cap %d", auth, runs, refused, limit)
			if refused != 0 {
				t.Fatalf("%d of %d runs refused; want none", refused, runs)
			}
			if n := liveSessions(t, d, tok); n > limit {
				t.Errorf("%d sessions live after the loop; want at most the cap, %d", n, limit)
			}
			if st := pingSession(t, d.url, tok, ids[0]); st != http.StatusNotFound {
				t.Errorf("the first run's session, ended to make room: ping status %d; want 404", st)
			}
			if st := pingSession(t, d.url, tok, ids[len(ids)-1]); st != http.StatusOK {
				t.Errorf("the last run's session: ping status %d; want 200", st)
			}
		})
	}
}

// sessionSpellings are initialize requests in every JSON spelling that
// encoding/json (mcp-go's parser) reads as an initialize; each must be
// counted like the plain one.
var sessionSpellings = map[string]struct {
	body   string
	length int64 // -1: no Content-Length
	hdr    []string
}{
	"plain":                {initBody, 0, nil},
	"unicode escape":       {strings.Replace(initBody, `"initialize"`, `"\u0069nitialize"`, 1), 0, nil},
	"space before colon":   {strings.Replace(initBody, `"method":`, `"method" :`, 1), 0, nil},
	"method after 512":     {`{"jsonrpc":"2.0","id":0,"params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("p", 600) + `","version":"1"}},"method":"initialize"}`, 0, nil},
	"duplicate keys":       {strings.Replace(initBody, `"method":"initialize"`, `"method":"ping","method":"initialize"`, 1), 0, nil},
	"key case":             {strings.Replace(initBody, `"method"`, `"METHOD"`, 1), 0, nil},
	"no content length":    {initBody, -1, nil},
	"with a session id":    {initBody, 0, []string{"Mcp-Session-Id", "depotfs-session-0123"}},
	"escaped key and tabs": {strings.Replace(initBody, `"method":"initialize"`, "\"m\\u0065thod\"\t:\t\"initialize\"", 1), 0, nil},
}

// TestSessionsEverySpelling: sessions opened by raw initializes in every
// spelling are all counted against the caps: of five sessions an identity
// opens with a cap of two, the last two live and the first three answer
// 404, whatever the spelling. A batch is refused and opens none.
func TestSessionsEverySpelling(t *testing.T) {
	t.Parallel()
	const perIdentity, opened = 2, 5
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-sessions-per-identity", fmt.Sprint(perIdentity)}})
	for name, sp := range sessionSpellings {
		var ids []string
		for range opened {
			length := sp.length
			if length == 0 {
				length = int64(len(sp.body))
			}
			st, id, body := rawSession(t, d.url, "", sp.body, length, sp.hdr...)
			if st != http.StatusOK || id == "" {
				t.Fatalf("%s: initialize: status %d, session %q: %s", name, st, id, body)
			}
			ids = append(ids, id)
		}
		var alive []int
		for i, id := range ids {
			if pingSession(t, d.url, "", id) == http.StatusOK {
				alive = append(alive, i)
			}
		}
		if !slices.Equal(alive, []int{opened - 2, opened - 1}) {
			t.Errorf("%s: sessions still alive of %d opened with a cap of %d: %v; want the last two", name, opened, perIdentity, alive)
		}
		if n := liveSessions(t, d, ""); n > perIdentity {
			t.Errorf("%s: %d sessions live; want at most %d", name, n, perIdentity)
		}
	}
	batch := `[` + initBody + `]`
	if st, id, _ := rawSession(t, d.url, "", batch, int64(len(batch))); st != http.StatusBadRequest || id != "" {
		t.Errorf("a batched initialize: status %d, session %q; want 400 and none", st, id)
	}
}

// TestSessionsGlobalCapEvicts: at --max-sessions the server's least
// recently used idle session, whoever holds it, is ended for a new one;
// one whose request is in flight (a stream open) is not, and when every
// session is busy the new one is refused 503 naming the flag.
func TestSessionsGlobalCapEvicts(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	a, _ := issueToken(t, tokens, "a", "*:/:rw")
	b, _ := issueToken(t, tokens, "b", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: a},
		args: []string{"--tokens", tokens, "--max-sessions", "2"}})
	_, a1, _ := rawSession(t, d.url, a, initBody, int64(len(initBody)))
	_, a2, _ := rawSession(t, d.url, a, initBody, int64(len(initBody)))
	// a2 busy: its GET stream stays open.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	req.Header.Set("Authorization", "Bearer "+a)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", a2)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET stream of a2: %v %v", err, res)
	}
	defer res.Body.Close()
	st, b1, body := rawSession(t, d.url, b, initBody, int64(len(initBody)))
	if st != http.StatusOK {
		t.Fatalf("b's first session at the server's cap: %d %s", st, body)
	}
	if pingSession(t, d.url, a, a1) != http.StatusNotFound || pingSession(t, d.url, a, a2) != http.StatusOK {
		t.Error("the server's cap did not end a1, the least recently used idle session, or ended a2, a busy one")
	}
	// a2 streams and b1 is busy too: nothing can be ended.
	req2, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	req2.Header = req.Header.Clone()
	req2.Header.Set("Authorization", "Bearer "+b)
	req2.Header.Set("Mcp-Session-Id", b1)
	res2, err := http.DefaultClient.Do(req2)
	if err != nil || res2.StatusCode != http.StatusOK {
		t.Fatalf("GET stream of b1: %v %v", err, res2)
	}
	defer res2.Body.Close()
	if st, id, body := rawSession(t, d.url, b, initBody, int64(len(initBody))); st != http.StatusServiceUnavailable || id != "" || !strings.Contains(body, "--max-sessions") {
		t.Errorf("a session with every session busy: status %d, id %q, %s; want 503 naming --max-sessions", st, id, body)
	}
}

// TestSessionsInitializeFlood: a token without grants sending
// initializes as fast as it can, in every spelling, holds no more than
// its cap; nothing of it is refused (it churns its own sessions) and
// another identity is not affected. The figures (sessions held, RSS) are
// logged; under DEPOTFS_SOAK=1 it sends 10,000.
func TestSessionsInitializeFlood(t *testing.T) {
	t.Parallel()
	total := bySoak(1000, 10000)
	tokens := t.TempDir() + "/tokens.json"
	flooder, _ := issueToken(t, tokens, "flooder")
	admin, _ := issueToken(t, tokens, "admin", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: admin},
		args: []string{"--tokens", tokens, "--max-conns-per-addr", "0"}})
	before := rssMiB(t, d.cmd.Process.Pid)
	opened, refused, took := floodInitializes(t, d.url, flooder, total)
	st, id, body := rawSession(t, d.url, admin, initBody, int64(len(initBody)))
	if st != http.StatusOK || id == "" {
		t.Fatalf("another identity's initialize after the flood: %d %s", st, body)
	}
	held := liveSessions(t, d, admin)
	after := rssMiB(t, d.cmd.Process.Pid)
	t.Logf("flood: %d initializes in %v, %d opened, %d refused; sessions live after: %d (cap 64 + the admin's 1); RSS %.1f -> %.1f MiB (+%.1f; race-detector binary)",
		total, took, opened, refused, held, before, after, after-before)
	if held > 64+1 {
		t.Errorf("%d sessions live after the flood; want at most the flooder's cap (64) and the admin's one", held)
	}
	if refused != 0 {
		t.Errorf("%d of the flooder's initializes refused; want none (it churns its own idle sessions)", refused)
	}
}

// floodInitializes sends total initializes with bearer, in every spelling
// of sessionSpellings that needs no header, from 8 workers, and returns
// how many opened a session, how many were refused, and how long it took.
func floodInitializes(t testing.TB, url, bearer string, total int) (opened, refused int64, took time.Duration) {
	t.Helper()
	var bodies []string
	for _, sp := range sessionSpellings {
		if sp.hdr == nil && sp.length == 0 {
			bodies = append(bodies, sp.body)
		}
	}
	var next, ok, no atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(total); i = next.Add(1) {
				body := bodies[int(i)%len(bodies)]
				if st, _, reply := rawSession(t, url, bearer, body, int64(len(body))); st == http.StatusOK {
					ok.Add(1)
				} else if no.Add(1) == 1 {
					t.Errorf("flood initialize: %d %s", st, reply)
				}
			}
		})
	}
	wg.Wait()
	return ok.Load(), no.Load(), time.Since(start).Round(time.Millisecond)
}

// rssMiB returns the resident set of process pid in MiB.
func rssMiB(t testing.TB, pid int) float64 {
	t.Helper()
	return procStatusMiB(t, pid, "VmRSS:")
}

// TestSessionsRevokedAtOnce: sessions that were only initialized (no
// request since) end when their credential is revoked: a token revoked
// and SIGHUP, a certificate put on the CRL. The time from the revocation
// (the command's return: the file rewritten) to the last of them gone is
// logged and must be under 2 s.
func TestSessionsRevokedAtOnce(t *testing.T) {
	t.Parallel()
	const n = 20
	t.Run("token", func(t *testing.T) {
		t.Parallel()
		tokens := t.TempDir() + "/tokens.json"
		tok, id := issueToken(t, tokens, "leaver", "*:/:rw")
		admin, _ := issueToken(t, tokens, "admin", "*:/:rw")
		d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: admin}, args: []string{"--tokens", tokens}})
		for range n {
			if st, _, body := rawSession(t, d.url, tok, initBody, int64(len(initBody))); st != http.StatusOK {
				t.Fatalf("initialize: %d %s", st, body)
			}
		}
		if got := liveSessions(t, d, admin); got != n {
			t.Fatalf("%d sessions live; want %d", got, n)
		}
		depotfsCommand(t, "token", "revoke", "--tokens", tokens, id)
		revoked := time.Now()
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the revoked token's sessions to end", func() bool { return liveSessions(t, d, admin) == 0 })
		took := time.Since(revoked)
		t.Logf("token revoke + SIGHUP -> the last of %d sessions gone: %v", n, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("the revoked token's sessions took %v to end; want at most 2s", took)
		}
	})
	t.Run("certificate", func(t *testing.T) {
		t.Parallel()
		p := newPKI(t)
		agent := p.issue("leaver", "*:/:rw")
		admin := p.issue("admin", "*:/:rw")
		d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: admin})
		hc := &http.Client{Transport: d.newClient(agent)}
		for range n {
			if st, _, body := rawSessionVia(t, hc, d.url, "", initBody, int64(len(initBody))); st != http.StatusOK {
				t.Fatalf("initialize: %d %s", st, body)
			}
		}
		adminHC := &http.Client{Transport: d.newClient(admin)}
		live := func() int { return liveSessionsVia(t, adminHC, d, "") }
		if got := live(); got != n {
			t.Fatalf("%d sessions live; want %d", got, n)
		}
		p.revoke(agent)
		revoked := time.Now()
		waitFor(t, 10*time.Second, "the revoked certificate's sessions to end", func() bool { return live() == 0 })
		took := time.Since(revoked)
		t.Logf("certificate revoked (CRL rewritten) -> the last of %d sessions gone: %v", n, took.Round(time.Millisecond))
		if took > 2*time.Second {
			t.Errorf("the revoked certificate's sessions took %v to end; want at most 2s", took)
		}
	})
}

// procStatusMiB returns the field (such as "VmRSS:") of process pid's
// /proc status, in MiB.
func procStatusMiB(t testing.TB, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
