package integration_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestMTLSRevocation proves revocation through the real
// binary over HTTPS with the mcp-go client: an agent's certificate works,
// also on a resumed TLS session; once "depotfs ca revoke" has rewritten the
// CRL, the next call on the already-open connection is refused (401), and
// so is a new connection resuming the old TLS session (at the handshake).
// Each refusal is logged with its reason and the depot is unchanged.
func TestMTLSRevocation(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	builder := p.issue("builder", "guide:/projects/a:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: builder})
	if !strings.HasPrefix(d.url, "https://") {
		t.Fatalf("daemon serves %s, want https", d.url)
	}

	env := d.mustCall("guide_cache_file", map[string]any{"path": "/projects/a/one.txt", "content": "one"})
	if w := d.callerOf("/projects/a/one.txt"); w != "http:depotfs://example.org/agent/builder" {
		t.Errorf("writer %q, want the certificate's identity (%+v)", w, env.Data)
	}

	// A second client with its own connection; a new connection resumes
	// the TLS session.
	c := d.connect(builder)
	if _, err := callWith(c.mcp, "guide_cache_file", map[string]any{"path": "/projects/a/two.txt", "content": "two"}); err != nil {
		t.Fatal(err)
	}
	c.reconnect()
	if env, err := callWith(c.mcp, "guide_cache_file", map[string]any{"path": "/projects/a/three.txt", "content": "3"}); err != nil || !env.Success {
		t.Fatalf("call on a resumed session: %v %+v", err, env.Error)
	}
	if hs := c.tlsHandshakes(); len(hs) != 2 || hs[0] || !hs[1] {
		t.Fatalf("client handshakes (resumed?) %v, want a full one and then a resumed one", hs)
	}

	before := snapshot(t, d.mount)
	p.revoke(builder)
	serial := builder.serial(t)

	// The daemon's own client still has its HTTP/2 connection open.
	handshakes := len(c.tlsHandshakes())
	if _, err := d.tryCall("guide_cache_file", map[string]any{"path": "/projects/a/after.txt", "content": "x"}); err == nil {
		t.Fatal("a revoked certificate was accepted on an open connection")
	}
	d.waitLogLine("the refused request in the log", `msg="authentication refused"`, "stage=request", "reason=revoked", "serial="+serial)

	// The second client's next call opens a new connection, resuming its
	// session: the handshake is refused.
	c.reconnect()
	if _, err := callWith(c.mcp, "guide_cache_file", map[string]any{"path": "/projects/a/after.txt", "content": "y"}); err == nil {
		t.Fatal("a revoked certificate was accepted on a resumed session")
	}
	hs := c.tlsHandshakes()
	if len(hs) != handshakes+1 || !hs[len(hs)-1] {
		t.Errorf("client handshakes %v: want one more, resumed", hs)
	}
	d.waitLogLine("the refused handshake in the log", `msg="authentication refused"`, "stage=handshake", "reason=revoked", "resumed=true", "serial="+serial)

	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused calls changed the depot:\n%s", diff)
	}

	// Each refusal is one audit record, with the certificate it claimed.
	var refusals []string
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Event == audit.EventAuth {
			if r.Serial != serial || r.Identity != "http:depotfs://example.org/agent/builder" || r.Decision != audit.Deny {
				t.Errorf("auth audit record %+v", r)
			}
			refusals = append(refusals, fmt.Sprintf("%s resumed=%v %s", r.Stage, r.Resumed, strings.SplitN(r.Reason, ":", 2)[0]))
		}
	}
	if want := []string{"request resumed=false revoked", "handshake resumed=true revoked"}; !slices.Equal(refusals, want) {
		t.Errorf("auth audit records %q, want %q", refusals, want)
	}
}

// TestMTLSRefusesStrangers: without a certificate, or with one from
// another CA, the TLS handshake fails and is logged.
func TestMTLSRefusesStrangers(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, noInit: true})
	other := newPKI(t)
	stranger := other.issue("stranger", "*:/:rw")
	stranger.caFile = p.caFile() // trusts the right server, presents a foreign certificate
	tests := []struct {
		name   string
		auth   clientAuth
		reason string
	}{
		{"no certificate", clientAuth{caFile: p.caFile()}, "reason=no_certificate"},
		{"certificate of another CA", stranger, "reason=untrusted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := initialize(d.newClient(tt.auth).mcp); err == nil {
				t.Fatal("initialize succeeded")
			}
			d.waitLogLine("the refused handshake in the log", `msg="authentication refused"`, "stage=handshake", tt.reason)
		})
	}
}

// TestBearerTokens: a token issued with "depotfs token issue" authenticates
// over plain loopback HTTP; a request without one gets 401 with a
// WWW-Authenticate challenge; "depotfs token revoke" takes effect at the
// next request.
func TestBearerTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := dir + "/tokens.json"
	tok, id := issueToken(t, tokens, "ci", "guide:/ci:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})

	d.mustCall("guide_cache_file", map[string]any{"path": "/ci/build.log", "content": "ok"})
	if w := d.callerOf("/ci/build.log"); w != "http:depotfs://local/token/ci" {
		t.Errorf("writer %q, want the token's identity", w)
	}

	res, err := http.Post(d.url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Bearer realm="depotfs"` {
		t.Errorf("request without a token: %d %q, want 401 with a Bearer challenge", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	d.waitLogLine("the refused request in the log", `msg="authentication refused"`, "reason=no_credentials")

	if list := depotfsCommand(t, "token", "list", "--tokens", tokens); !strings.Contains(list, id) || strings.Contains(list, tok) {
		t.Errorf("token list: %q", list)
	}
	depotfsCommand(t, "token", "revoke", "--tokens", tokens, id)
	if _, err := d.tryCall("guide_cache_file", map[string]any{"path": "/ci/after.log", "content": "x"}); err == nil {
		t.Fatal("a revoked token was accepted")
	}
	d.waitLogLine("the revoked token in the log", `msg="authentication refused"`, "reason=token_revoked", "token_id="+id)
	if _, err := os.Stat(d.path("/ci/after.log")); err == nil {
		t.Error("a call with a revoked token wrote to the depot")
	}
}

// TestTokensOverTLS: with a client CA and tokens, a client without a
// certificate authenticates with its token over HTTPS.
func TestTokensOverTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	p.tokens = t.TempDir() + "/tokens.json"
	tok, _ := issueToken(t, p.tokens, "runner", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: clientAuth{caFile: p.caFile(), bearer: tok}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/runner.txt", "content": "r"})
	if w := d.callerOf("/runner.txt"); w != "http:depotfs://local/token/runner" {
		t.Errorf("writer %q", w)
	}
	if len(d.logLines("depotfs ready", "auth=mtls+tokens")) != 1 {
		t.Error("the ready line does not report auth=mtls+tokens")
	}
}
