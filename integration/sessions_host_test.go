package integration_test

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// hostRequest posts an initialize to url with the Host and Origin headers
// given ("" leaves them alone) and returns the status and body.
func hostRequest(t *testing.T, url, bearer, host, origin string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(initBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+bearer)
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestSessionsHostBehindProxy: a TLS-terminating proxy on the same host
// that forwards "Host: depot.example.com" with a bearer token works when
// the operator names the host (--public-url, --allowed-hosts), through the
// official Go SDK client; another Host, or a browser's Origin from another
// site, is refused 403 with the flag to set, logged, and audited once per
// burst.
func TestSessionsHostBehindProxy(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tok, _ := issueToken(t, tokens, "agent", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tok},
		args: []string{"--tokens", tokens, "--public-url", "https://depot.example.com", "--allowed-hosts", "mcp.example.net"}})
	target, _ := url.Parse(d.url)
	proxy := httptest.NewTLSServer(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host})
		pr.Out.Host = "depot.example.com" // as nginx's proxy_set_header Host $host
	}})
	defer proxy.Close()
	hc := proxy.Client()
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "behind-proxy", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: proxy.URL + "/mcp", MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerOver{tok, hc.Transport}}},
		&sdk.ClientSessionOptions{ProtocolVersion: sessionRevision})
	if err != nil {
		t.Fatalf("the Go SDK client through a proxy sending Host: depot.example.com: %v", err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "guide_cache_stats", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("guide_cache_stats through the proxy: %v %v", err, res)
	}
	cs.Close()

	for host, want := range map[string]int{
		"depot.example.com":      http.StatusOK, // --public-url's host
		"DEPOT.example.com:443":  http.StatusOK,
		"mcp.example.net":        http.StatusOK, // --allowed-hosts
		"localhost:7411":         http.StatusOK,
		"evil.example":           http.StatusForbidden,
		"depot.example.com.evil": http.StatusForbidden,
	} {
		st, body := hostRequest(t, d.url, tok, host, "")
		if st != want {
			t.Errorf("Host %s: status %d %s; want %d", host, st, body, want)
		}
		if want == http.StatusForbidden && !strings.Contains(body, "--allowed-hosts") {
			t.Errorf("Host %s refused with %q; want the flag that allows it named", host, body)
		}
	}
	for origin, want := range map[string]int{
		"https://depot.example.com": http.StatusOK,
		"http://localhost:3000":     http.StatusOK,
		"https://evil.example":      http.StatusForbidden,
		"null":                      http.StatusForbidden,
	} {
		if st, body := hostRequest(t, d.url, tok, "depot.example.com", origin); st != want {
			t.Errorf("Origin %s: status %d %s; want %d", origin, st, body, want)
		}
	}
	for range 50 {
		if st, _ := hostRequest(t, d.url, tok, "evil.example", ""); st != http.StatusForbidden {
			t.Fatalf("a burst of refused hosts: status %d", st)
		}
	}
	if !strings.Contains(d.logs.String(), "host not allowed") {
		t.Error("no log line of the refused host")
	}
	d.stop()
	n := 0
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Stage == "host" {
			n++
			if !strings.Contains(r.Reason, "--allowed-hosts") || r.TokenID == "" {
				t.Errorf("audit record of a refused host: %+v; want the flag and the token named", r)
			}
		}
	}
	if n < 1 || n > 3 {
		t.Errorf("%d audit records of 56 refused hosts in one burst; want 1 to 3", n)
	}
}
