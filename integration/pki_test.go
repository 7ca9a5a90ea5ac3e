package integration_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// pki is a depotfs CA made with the real binary's "ca" commands, and a
// server certificate for 127.0.0.1 from it. A daemon started with it serves
// HTTPS: with its client CA and CRL (mTLS) unless noClientCA, and with the
// tokens file if tokens is set.
type pki struct {
	t          testing.TB
	dir        string // the CA directory: ca.crt, ca.key, crl.pem
	out        string // issued keys and certificates
	noClientCA bool
	tokens     string
}

// newPKI runs "depotfs ca init" and "depotfs ca server-cert".
func newPKI(t testing.TB) *pki {
	t.Helper()
	root := t.TempDir()
	p := &pki{t: t, dir: filepath.Join(root, "ca"), out: filepath.Join(root, "issued")}
	depotfsCommand(t, "ca", "init", "--dir", p.dir)
	depotfsCommand(t, "ca", "server-cert", "--dir", p.dir, "--host", "127.0.0.1", "--out", p.out)
	return p
}

// caFile is the CA certificate, which clients trust the server with.
func (p *pki) caFile() string { return filepath.Join(p.dir, "ca.crt") }

// crlFile is the CRL the daemon reads (--crl), rewritten by revoke.
func (p *pki) crlFile() string { return filepath.Join(p.dir, "crl.pem") }

// serveArgs are the serve flags for this PKI; none for a nil pki.
func (p *pki) serveArgs() []string {
	if p == nil {
		return nil
	}
	args := []string{"--tls-cert", filepath.Join(p.out, "server.crt"), "--tls-key", filepath.Join(p.out, "server.key")}
	if !p.noClientCA {
		args = append(args, "--client-ca", p.caFile(), "--crl", p.crlFile())
	}
	if p.tokens != "" {
		args = append(args, "--tokens", p.tokens)
	}
	return args
}

// issue runs "depotfs ca issue" for agent name in domain example.org with
// grants (TOOL:PREFIX:ACCESS) and returns how a client presents it.
func (p *pki) issue(name string, grants ...string) clientAuth {
	p.t.Helper()
	args := []string{"ca", "issue", "--dir", p.dir, "--name", name, "--domain", "example.org", "--out", p.out}
	for _, g := range grants {
		args = append(args, "--grant", g)
	}
	depotfsCommand(p.t, args...)
	return clientAuth{caFile: p.caFile(), certFile: filepath.Join(p.out, name+".crt"), keyFile: filepath.Join(p.out, name+".key")}
}

// revoke runs "depotfs ca revoke" on a's certificate file, which rewrites
// the CRL the daemon reads.
func (p *pki) revoke(a clientAuth) {
	p.t.Helper()
	depotfsCommand(p.t, "ca", "revoke", "--dir", p.dir, a.certFile)
}

// issueToken runs "depotfs token issue" on file and returns the token and
// its id.
func issueToken(t testing.TB, file, name string, grants ...string) (token, id string) {
	t.Helper()
	args := []string{"token", "issue", "--tokens", file, "--name", name}
	for _, g := range grants {
		args = append(args, "--grant", g)
	}
	token = strings.TrimSpace(depotfsCommand(t, args...))
	if !strings.HasPrefix(token, "dfs1_") || len(token) < 22 {
		t.Fatalf("token issue printed %q", token)
	}
	return token, token[len("dfs1_") : len("dfs1_")+16]
}

// depotfsCommand runs the binary with args and returns its stdout,
// failing the test if it exits non-zero.
func depotfsCommand(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command(depotfsBin, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("depotfs %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// clientAuth is how a test client authenticates: the CA it trusts the
// server with (empty for plain HTTP), a client certificate and key, a
// bearer token, or none of them.
type clientAuth struct {
	caFile, certFile, keyFile string
	bearer                    string
}

// serial returns the serial of a's certificate in hex, as depotfs logs it.
func (a clientAuth) serial(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(a.certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c.SerialNumber.Text(16)
}

// mcpClient is an MCP client over streamable HTTP whose connections a
// test controls: reconnect makes the next request open a new connection,
// and tlsHandshakes tells which handshakes resumed a TLS session (its
// session cache makes reconnections resume).
type mcpClient struct {
	mcp *client.Client
	tls *tls.Config // nil for plain HTTP

	mu         sync.Mutex
	current    *http.Transport
	all        []*http.Transport
	handshakes []bool // DidResume of each TLS handshake, in order
}

// RoundTrip sends r on the current transport.
func (c *mcpClient) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	rt := c.current
	c.mu.Unlock()
	return rt.RoundTrip(r)
}

// reconnect replaces the HTTP transport, so the next request opens a new
// connection whatever state the old ones are in.
func (c *mcpClient) reconnect() {
	c.mu.Lock()
	old := c.current
	c.current = &http.Transport{TLSClientConfig: c.tls, ForceAttemptHTTP2: true}
	c.all = append(c.all, c.current)
	c.mu.Unlock()
	old.CloseIdleConnections()
}

// close closes the client and every connection it opened.
func (c *mcpClient) close() {
	_ = c.mcp.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tr := range c.all {
		tr.CloseIdleConnections()
	}
}

// newClient returns an unconnected client of d authenticating with a;
// connect it with initialize. It is closed in t.Cleanup.
func (d *daemon) newClient(a clientAuth) *mcpClient {
	d.t.Helper()
	c := &mcpClient{}
	if a.caFile != "" {
		caPEM, err := os.ReadFile(a.caFile)
		if err != nil {
			d.t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(caPEM) {
			d.t.Fatalf("no certificate in %s", a.caFile)
		}
		c.tls = &tls.Config{RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(8),
			VerifyConnection: func(cs tls.ConnectionState) error {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.handshakes = append(c.handshakes, cs.DidResume)
				return nil
			}}
		if a.certFile != "" {
			cert, err := tls.LoadX509KeyPair(a.certFile, a.keyFile)
			if err != nil {
				d.t.Fatal(err)
			}
			c.tls.Certificates = []tls.Certificate{cert}
		}
	}
	c.current = &http.Transport{TLSClientConfig: c.tls, ForceAttemptHTTP2: true}
	c.all = []*http.Transport{c.current}
	opts := []transport.StreamableHTTPCOption{transport.WithHTTPBasicClient(&http.Client{Transport: c})}
	if a.bearer != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + a.bearer}))
	}
	mc, err := client.NewStreamableHttpClient(d.url, opts...)
	if err != nil {
		d.t.Fatalf("http client: %v", err)
	}
	if err := mc.Start(context.Background()); err != nil {
		d.t.Fatalf("start http client: %v", err)
	}
	c.mcp = mc
	d.t.Cleanup(c.close)
	return c
}

// connect returns a client of d authenticating with a, initialized.
func (d *daemon) connect(a clientAuth) *mcpClient {
	d.t.Helper()
	c := d.newClient(a)
	if err := initialize(c.mcp); err != nil {
		d.t.Fatalf("initialize: %v\ndaemon log tail:\n%s", err, tail(d.logs.String(), 40))
	}
	return c
}

// tlsHandshakes returns the DidResume of each TLS handshake so far.
func (c *mcpClient) tlsHandshakes() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]bool(nil), c.handshakes...)
}

// logLines returns the daemon's log lines containing every one of parts.
func (d *daemon) logLines(parts ...string) []string {
	var out []string
	for _, line := range strings.Split(d.logs.String(), "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(line, p)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// waitLogLine polls the daemon's log until a line contains every one of
// parts, and returns it.
func (d *daemon) waitLogLine(what string, parts ...string) string {
	d.t.Helper()
	var line string
	waitFor(d.t, 10*time.Second, what, func() bool {
		lines := d.logLines(parts...)
		if len(lines) > 0 {
			line = lines[0]
		}
		return line != ""
	})
	return line
}

var identityRE = regexp.MustCompile(`identity=(\S+)`)

// callerOf returns the identity the daemon logged for the successful call
// that wrote path.
func (d *daemon) callerOf(path string) string {
	d.t.Helper()
	line := d.waitLogLine("the call on "+path+" in the log", `msg="mcp call"`, "path="+path+" ", "outcome=ok")
	m := identityRE.FindStringSubmatch(line)
	if m == nil {
		d.t.Fatalf("no identity in %q", line)
	}
	return m[1]
}
