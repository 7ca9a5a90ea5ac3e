package ca_test

import (
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/auth/ca"
	"github.com/depotfs/depotfs/internal/grant"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestLifecycle: a CA made by Init issues an agent certificate that the
// server's verifier accepts with its grants, and refuses after Revoke.
func TestLifecycle(t *testing.T) {
	now := time.Now().Truncate(time.Second) // certificates hold whole seconds
	dir := filepath.Join(t.TempDir(), "ca")
	if _, err := ca.Init(dir, "depotfs test CA", 0, now); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Init(dir, "again", ca.DefaultCAValidity, now); !errors.Is(err, ca.ErrExists) {
		t.Errorf("second Init: %v, want ErrExists", err)
	}
	for file, want := range map[string]os.FileMode{ca.KeyFile: 0o600, ca.CertFile: 0o644, ca.CRLFile: 0o644} {
		if fi, err := os.Stat(filepath.Join(dir, file)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", file, fi.Mode().Perm(), err, want)
		}
	}
	c, err := ca.Open(dir)
	if err != nil {
		t.Fatal(err)
	}

	gs := []grant.Grant{{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}}
	agent, err := c.IssueAgent(ca.AgentRequest{Name: "builder", Domain: "example.org", Grants: gs}, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := agent.Cert.NotAfter.Sub(now); got != ca.DefaultAgentValidity {
		t.Errorf("agent validity %v, want %v", got, ca.DefaultAgentValidity)
	}
	caCert, err := auth.LoadCACert(filepath.Join(dir, ca.CertFile))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := auth.OpenCRL(c.CRLPath(), caCert, &auth.FileOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewCertVerifier(caCert, crl, &auth.CertOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	id, err := v.Verify([]*x509.Certificate{agent.Cert})
	if err != nil || id.Subject != "depotfs://example.org/agent/builder" || id.Display != "builder" || !slices.Equal(id.Grants, gs) {
		t.Fatalf("Verify = %+v, %v", id, err)
	}

	certFile := filepath.Join(t.TempDir(), "builder.crt")
	if err := os.WriteFile(certFile, agent.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	serial, err := c.SerialOf(certFile)
	if err != nil || serial.Cmp(agent.Cert.SerialNumber) != 0 {
		t.Fatalf("SerialOf = %v, %v", serial, err)
	}
	if _, added, err := c.Revoke(serial, now); err != nil || !added {
		t.Fatalf("Revoke = %v, %v", added, err)
	}
	if _, added, err := c.Revoke(serial, now); err != nil || added {
		t.Errorf("second Revoke = %v, %v; want not added", added, err)
	}
	if _, err := v.Verify([]*x509.Certificate{agent.Cert}); !errors.Is(err, auth.ErrRevoked) {
		t.Errorf("after Revoke: %v, want ErrRevoked (the verifier reads the new CRL)", err)
	}

	if _, next, err := c.WriteCRL(time.Hour, now); err != nil || !next.Equal(now.Add(time.Hour)) || c.Cert().NotAfter.Sub(now) != ca.DefaultCAValidity {
		t.Errorf("WriteCRL = %v, %v", next, err)
	}
	if _, err := v.Verify([]*x509.Certificate{agent.Cert}); !errors.Is(err, auth.ErrRevoked) {
		t.Errorf("after WriteCRL: %v, want ErrRevoked still", err)
	}
}

func TestIssueServer(t *testing.T) {
	now := time.Now()
	c, err := ca.Init(t.TempDir(), "CA", ca.DefaultCAValidity, now)
	if err != nil {
		t.Fatal(err)
	}
	is, err := c.IssueServer([]string{"depot.example.org", "127.0.0.1"}, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.Cert())
	for _, host := range []string{"depot.example.org", "127.0.0.1"} {
		if _, err := is.Cert.Verify(x509.VerifyOptions{DNSName: host, Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	if _, err := c.IssueServer(nil, 0, now); err == nil {
		t.Error("a server certificate without hosts was issued")
	}
	if _, err := c.IssueAgent(ca.AgentRequest{Name: "x", Validity: 20 * 365 * 24 * time.Hour}, now); err == nil {
		t.Error("an agent certificate outliving the CA was issued")
	}
	if _, err := c.IssueAgent(ca.AgentRequest{Name: "bad name"}, now); err == nil {
		t.Error("an agent certificate with an invalid name was issued")
	}
}

func TestParseSerial(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // 0: refused
	}{
		{"2a", 42}, {"0x2A", 42}, {"00:2A", 42}, {"", 0}, {"0", 0}, {"-2a", 0}, {"xyz", 0},
	}
	for _, tt := range tests {
		got, err := ca.ParseSerial(tt.in)
		if tt.want == 0 {
			if err == nil {
				t.Errorf("ParseSerial(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Cmp(big.NewInt(tt.want)) != 0 {
			t.Errorf("ParseSerial(%q) = %v, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}
