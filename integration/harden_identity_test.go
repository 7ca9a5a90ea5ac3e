package integration_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestIdentityNamespaces: a token and a certificate
// issued for the same name are two identities; a caller whose grants are
// all read-only sees no write tool; an unauthenticated HTTP caller has one
// identity string in replies and the audit log; 'ca revoke' says until
// when the CRL is valid and serve warns a week before it expires.
func TestIdentityNamespaces(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	p.tokens = filepath.Join(t.TempDir(), "tokens.json")
	// A certificate for "same" in the default (local) domain, and a token
	// for "same".
	depotfsCommand(t, "ca", "issue", "--dir", p.dir, "--name", "same", "--out", p.out, "--grant", "*:/:rw")
	cert := clientAuth{caFile: p.caFile(), certFile: filepath.Join(p.out, "same.crt"), keyFile: filepath.Join(p.out, "same.key")}
	tok, _ := issueToken(t, p.tokens, "same", "*:/:rw")
	ro, _ := issueToken(t, p.tokens, "reader", "guide:/:r")
	// A CRL that expires in 3 days: serve warns at start.
	depotfsCommand(t, "ca", "crl", "--dir", p.dir, "--days", "3")
	d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: cert})
	d.mustCall("guide_cache_file", map[string]any{"path": "/by-cert.txt", "content": "c"})
	byToken := d.connect(clientAuth{caFile: p.caFile(), bearer: tok})
	if env, err := callWith(byToken.mcp, "guide_cache_file", map[string]any{"path": "/by-token.txt", "content": "t"}); err != nil || !env.Success {
		t.Fatalf("call with the token: %+v, %v", env, err)
	}
	if c, k := d.callerOf("/by-cert.txt"), d.callerOf("/by-token.txt"); c == k {
		t.Errorf("a certificate and a token named alike share the identity %q", c)
	}
	reader := d.connect(clientAuth{caFile: p.caFile(), bearer: ro})
	tools := listToolsOf(t, reader)
	if slices.Contains(tools, "guide_cache_file") || !slices.Contains(tools, "guide_cache_stats") {
		t.Errorf("a read-only caller sees %q; want no write tool", tools)
	}
	if len(d.logLines("the CRL must be re-signed soon")) == 0 {
		t.Error("serve did not warn about a CRL expiring in 3 days")
	}
	out := depotfsCommand(t, "ca", "revoke", "--dir", p.dir, cert.certFile)
	if !strings.Contains(out, "The CRL is valid until") {
		t.Errorf("ca revoke does not say until when the CRL is valid:\n%s", out)
	}

	plain := startDaemon(t, daemonConfig{transport: overHTTP})
	env := plain.mustCall("guide_cache_stats", map[string]any{})
	caller, _ := env.Stats["caller"].(map[string]any)
	replyID, _ := caller["identity"].(string)
	plain.stop()
	recs := auditRecords(t, plain.auditLog())
	if replyID == "" || len(recs) == 0 || recs[len(recs)-1].Identity != replyID {
		t.Errorf("reply identity %q, audit identity %q; want one string", replyID, recs[len(recs)-1].Identity)
	}
}

// listToolsOf returns the names of the tools c sees.
func listToolsOf(t testing.TB, c *mcpClient) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.mcp.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}
