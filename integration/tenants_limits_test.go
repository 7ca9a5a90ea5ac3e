package integration_test

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// initializeAs posts an initialize of a stateful revision with a bearer
// token and returns the status, the body and the session id.
func initializeAs(t testing.TB, url, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String(), res.Header.Get("Mcp-Session-Id")
}

// TestSessionFloodPerIdentity: a token without grants opening sessions
// as fast as it can (and abandoning them) reaches its own limit, not the
// server's: another identity's initialize keeps working during the flood,
// and its latency is reported.
func TestSessionFloodPerIdentity(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	flooder, _ := issueToken(t, tokens, "flooder")
	other, _ := issueToken(t, tokens, "other", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: other},
		args: []string{"--tokens", tokens, "--max-sessions", "200", "--max-conns-per-addr", "0"}})

	var opened, refused atomic.Int64
	var refusal atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopFlood := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopFlood()
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch st, body, _ := initializeAs(t, d.url, flooder); st {
				case http.StatusOK:
					opened.Add(1)
				case http.StatusServiceUnavailable:
					refused.Add(1)
					refusal.Store(body)
				default:
					t.Errorf("flood initialize: %d %s", st, body)
					return
				}
			}
		})
	}
	waitFor(t, 60*time.Second, "the flooder to reach its limit", func() bool { return refused.Load() > 0 })
	var took []time.Duration
	for i := range 20 {
		start := time.Now()
		st, body, sid := initializeAs(t, d.url, other)
		took = append(took, time.Since(start))
		if st != http.StatusOK || sid == "" {
			t.Fatalf("another identity's initialize %d during the flood: %d %s", i, st, body)
		}
	}
	stopFlood()
	slices.Sort(took)
	t.Logf("flood: %d sessions opened, %d refused; another identity's initialize during it: median %v, max %v",
		opened.Load(), refused.Load(), took[len(took)/2], took[len(took)-1])
	if n := opened.Load(); n > 64 {
		t.Errorf("one identity opened %d sessions; want at most --max-sessions-per-identity (64)", n)
	}
	if body, _ := refusal.Load().(string); !strings.Contains(body, "max-sessions-per-identity") {
		t.Errorf("the flooder's refusal %q does not name --max-sessions-per-identity", body)
	}
}
