package auth_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/identity"
)

// sink records authentication failures.
type sink struct {
	mu sync.Mutex
	fs []auth.Failure
}

var _ auth.EventSink = (*sink)(nil)

func (s *sink) AuthFailure(_ context.Context, f auth.Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fs = append(s.fs, f)
}

// take returns the failures recorded so far and forgets them.
func (s *sink) take() []auth.Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := s.fs
	s.fs = nil
	return fs
}

// waitOne polls until exactly one failure has been recorded (a handshake
// failure is reported by the server after the client has given up) and
// returns it.
func (s *sink) waitOne(t testing.TB) auth.Failure {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.fs)
		s.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	fs := s.take()
	if len(fs) != 1 {
		t.Fatalf("%d failures recorded, want 1: %+v", len(fs), fs)
	}
	return fs[0]
}

// tlsServer is an HTTPS server with the auth Listener and Authenticator in
// front of a handler that echoes the caller's identity.
type tlsServer struct {
	*fixture
	url    string
	sink   *sink
	tokens string // tokens file, "" when tokens are off
}

func startTLSServer(t *testing.T, withTokens bool) *tlsServer {
	t.Helper()
	s := &tlsServer{fixture: newFixture(t, false), sink: &sink{}}
	serverTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "depotfs server"},
		NotBefore: base.Add(-time.Hour), NotAfter: base.Add(30 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	serverCert, serverKey := s.ca.issue(t, serverTmpl)
	a := &auth.Authenticator{Certs: s.v, Sink: s.sink, Now: s.clock.Now, Logger: quiet}
	if withTokens {
		s.tokens = filepath.Join(t.TempDir(), "tokens.json")
		if _, _, err := auth.IssueToken(s.tokens, "placeholder", nil, time.Time{}, base); err != nil {
			t.Fatal(err)
		}
		var err error
		if a.Tokens, err = auth.OpenTokens(s.tokens, &auth.FileOptions{Now: s.clock.Now, Logger: quiet}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := auth.ServerConfig(tls.Certificate{Certificate: [][]byte{serverCert.Raw}, PrivateKey: serverKey, Leaf: serverCert},
		s.v, !withTokens, s.clock.Now)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := auth.NewListener(inner, cfg, &auth.ListenerOptions{Sink: s.sink, Now: s.clock.Now, Logger: quiet})
	hs := &http.Server{Handler: a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := identity.FromContext(r.Context())
		fmt.Fprintf(w, "%s %s %d", id.Subject, id.Method, r.ProtoMajor)
	})), ErrorLog: nil}
	served := make(chan struct{})
	go func() { defer close(served); _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Close()
		ln.Close()
		<-served
	})
	s.url = "https://" + inner.Addr().String() + "/mcp"
	return s
}

// client returns an HTTP client trusting the test CA, presenting cert (if
// any), with a TLS session cache.
func (s *tlsServer) client(t *testing.T, cert *x509.Certificate, key any, maxVersion uint16) (*http.Client, *http.Transport) {
	t.Helper()
	roots := x509.NewCertPool()
	roots.AddCert(s.ca.cert)
	cfg := &tls.Config{RootCAs: roots, Time: s.clock.Now, ClientSessionCache: tls.NewLRUClientSessionCache(4), MaxVersion: maxVersion}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}}
	}
	tr := &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}, tr
}

// get sends one request and returns status, body and the TLS state.
func get(t *testing.T, c *http.Client, url, bearer string) (int, string, *tls.ConnectionState, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusUnauthorized {
		body = []byte(res.Header.Get("WWW-Authenticate"))
	}
	return res.StatusCode, string(body), res.TLS, nil
}

// TestRevokedOnOpenAndResumed: a certificate revoked while its HTTP/2
// connection is open is refused at the next request on that connection,
// and a resumed TLS session with it is refused at the handshake.
func TestRevokedOnOpenAndResumed(t *testing.T) {
	s := startTLSServer(t, false)
	cert, key := s.ca.issue(t, agentTemplate(t, "builder"))
	c, tr := s.client(t, cert, key, 0)

	status, body, _, err := get(t, c, s.url, "")
	if err != nil || status != 200 || body != "depotfs://example.org/agent/builder cert 2" {
		t.Fatalf("first request: %d %q %v", status, body, err)
	}
	tr.CloseIdleConnections()
	status, _, cs, err := get(t, c, s.url, "")
	if err != nil || status != 200 || !cs.DidResume {
		t.Fatalf("second connection: %d %v, resumed %v; want a resumed session", status, err, cs != nil && cs.DidResume)
	}

	writeCRL(t, s.crlPath, s.ca.cert, s.ca.key, 2, base.Add(-time.Hour), 7*24*time.Hour, cert.SerialNumber)
	status, body, _, err = get(t, c, s.url, "")
	if err != nil || status != http.StatusUnauthorized || body != `Bearer realm="depotfs"` {
		t.Fatalf("request on the open connection after revocation: %d %q %v; want 401", status, body, err)
	}
	f := s.sink.waitOne(t)
	if f.Stage != auth.StageRequest || f.Reason != "revoked" || f.Method != identity.MethodCert || f.Serial != cert.SerialNumber.Text(16) ||
		f.Subject != "depotfs://example.org/agent/builder" || !f.Time.Equal(base) {
		t.Errorf("request failure %+v", f)
	}

	tr.CloseIdleConnections()
	if status, _, _, err := get(t, c, s.url, ""); err == nil {
		t.Fatalf("resumed session with a revoked certificate: status %d, want a failed handshake", status)
	}
	f = s.sink.waitOne(t)
	if f.Stage != auth.StageHandshake || f.Reason != "revoked" || !f.Resumed || f.Serial != cert.SerialNumber.Text(16) || f.Remote == "" {
		t.Errorf("handshake failure %+v", f)
	}
}

func TestHandshakeRefusals(t *testing.T) {
	s := startTLSServer(t, false)
	expired := agentTemplate(t, "old")
	expired.NotAfter = base.Add(-time.Minute)
	expiredCert, expiredKey := s.ca.issue(t, expired)
	goodCert, goodKey := s.ca.issue(t, agentTemplate(t, "good"))
	tests := []struct {
		name       string
		cert       *x509.Certificate
		key        any
		maxVersion uint16
		reason     string
	}{
		{"no certificate", nil, nil, 0, "no_certificate"},
		{"expired certificate", expiredCert, expiredKey, 0, "expired"},
		{"TLS 1.2", goodCert, goodKey, tls.VersionTLS12, "tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := s.client(t, tt.cert, tt.key, tt.maxVersion)
			if status, _, _, err := get(t, c, s.url, ""); err == nil {
				t.Fatalf("status %d, want a failed handshake", status)
			}
			f := s.sink.waitOne(t)
			if f.Stage != auth.StageHandshake || f.Reason != tt.reason || f.Remote == "" {
				t.Errorf("failure %+v, want reason %q", f, tt.reason)
			}
			if wantMethod := map[bool]identity.Method{true: identity.MethodCert}[tt.reason == "expired"]; f.Method != wantMethod {
				t.Errorf("failure method %q, want %q", f.Method, wantMethod)
			}
		})
	}
}

func TestBearerTokens(t *testing.T) {
	s := startTLSServer(t, true)
	tok, rec, err := auth.IssueToken(s.tokens, "ci", nil, time.Time{}, base)
	if err != nil {
		t.Fatal(err)
	}
	cert, key := s.ca.issue(t, agentTemplate(t, "builder"))
	anon, _ := s.client(t, nil, nil, 0)
	withCert, _ := s.client(t, cert, key, 0)
	tests := []struct {
		name       string
		c          *http.Client
		bearer     string
		wantStatus int
		wantBody   string
		reason     string
	}{
		{"token", anon, tok, 200, "depotfs://local/token/ci token 2", ""},
		{"certificate without token", withCert, "", 200, "depotfs://example.org/agent/builder cert 2", ""},
		{"nothing", anon, "", 401, `Bearer realm="depotfs"`, "no_credentials"},
		{"bad token", anon, "dfs1_" + rec.ID + "_" + strings.Repeat("0", 64), 401, `Bearer realm="depotfs", error="invalid_token"`, "token_unknown"},
		{"not a depotfs token", anon, "hunter2", 401, `Bearer realm="depotfs", error="invalid_token"`, "token_malformed"},
		{"certificate and token", withCert, tok, 401, `Bearer realm="depotfs", error="invalid_token"`, "ambiguous_credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, _, err := get(t, tt.c, s.url, tt.bearer)
			if err != nil || status != tt.wantStatus || body != tt.wantBody {
				t.Fatalf("= %d %q %v, want %d %q", status, body, err, tt.wantStatus, tt.wantBody)
			}
			if tt.reason == "" {
				if fs := s.sink.take(); len(fs) != 0 {
					t.Errorf("failures recorded for an accepted request: %+v", fs)
				}
				return
			}
			if f := s.sink.waitOne(t); f.Stage != auth.StageRequest || f.Reason != tt.reason {
				t.Errorf("failure %+v, want reason %q", f, tt.reason)
			} else if tt.name == "bad token" && f.TokenID != rec.ID {
				t.Errorf("failure names token %q, want %q", f.TokenID, rec.ID)
			}
		})
	}

	if err := auth.RevokeToken(s.tokens, rec.ID, base); err != nil {
		t.Fatal(err)
	}
	if status, _, _, err := get(t, anon, s.url, tok); err != nil || status != 401 {
		t.Errorf("revoked token: %d %v, want 401", status, err)
	}
	if f := s.sink.waitOne(t); f.Reason != "token_revoked" || f.TokenID != rec.ID {
		t.Errorf("failure %+v", f)
	}
}
