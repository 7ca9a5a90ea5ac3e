package auth_test

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// TestVerify is the table of certificates that must fail, each built here,
// and the one that must pass. A certificate is refused (wantErr: Verify
// fails with that error, at the handshake and at every request), or
// authenticated with no grants (wantGrantsErr: Verify succeeds with an
// identity that has no grants and is not Full, and CertGrants names the
// problem). Only "valid" is authenticated with grants.
func TestVerify(t *testing.T) {
	f := newFixture(t, false)
	other := newCA(t, "depotfs test CA") // same subject, another key
	revoked, _ := f.ca.issue(t, agentTemplate(t, "revoked"))
	crlNumber := int64(1)
	goodCRL := func(t *testing.T) {
		crlNumber++
		writeCRL(t, f.crlPath, f.ca.cert, f.ca.key, crlNumber, base.Add(-time.Hour), 7*24*time.Hour, revoked.SerialNumber)
	}
	goodCRL(t)

	validGrants, _ := auth.EncodeGrants([]grant.Grant{{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}})
	withExt := func(ext pkix.Extension) func(*x509.Certificate) {
		return func(c *x509.Certificate) { c.ExtraExtensions = []pkix.Extension{ext} }
	}
	byCA := func(ca *testCA, mod func(*x509.Certificate)) func(t *testing.T) *x509.Certificate {
		return func(t *testing.T) *x509.Certificate {
			tmpl := agentTemplate(t, "agent")
			if mod != nil {
				mod(tmpl)
			}
			c, _ := ca.issue(t, tmpl)
			return c
		}
	}
	ours := func(mod func(*x509.Certificate)) func(t *testing.T) *x509.Certificate { return byCA(f.ca, mod) }

	tests := []struct {
		name          string
		cert          func(t *testing.T) *x509.Certificate
		advance       time.Duration      // clock moves before Verify
		crl           func(t *testing.T) // replaces the CRL before Verify; a good one is restored after
		wantErr       error
		wantGrantsErr error
	}{
		{name: "valid", cert: ours(nil)},
		{name: "expired", cert: ours(func(c *x509.Certificate) { c.NotAfter = base.Add(-time.Minute) }), wantErr: auth.ErrExpired},
		{name: "not yet valid", cert: ours(func(c *x509.Certificate) { c.NotBefore = base.Add(time.Minute) }), wantErr: auth.ErrExpired},
		{name: "wrong CA with the same subject", cert: byCA(other, nil), wantErr: auth.ErrUntrusted},
		{name: "self-signed", cert: func(t *testing.T) *x509.Certificate {
			tmpl := agentTemplate(t, "agent")
			tmpl.Issuer = f.ca.cert.Subject // claims the CA as issuer
			key := newKey(t)
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
			if err != nil {
				t.Fatal(err)
			}
			c, _ := x509.ParseCertificate(der)
			return c
		}, wantErr: auth.ErrUntrusted},
		{name: "the CA certificate presented as a client", cert: func(*testing.T) *x509.Certificate { return f.ca.cert }, wantErr: auth.ErrUsage},
		{name: "a sub-CA certificate with ClientAuth", cert: ours(func(c *x509.Certificate) {
			c.IsCA, c.BasicConstraintsValid, c.KeyUsage = true, true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		}), wantErr: auth.ErrUsage},
		{name: "server-auth-only extended key usage", cert: ours(func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} }), wantErr: auth.ErrUsage},
		{name: "no extended key usage", cert: ours(func(c *x509.Certificate) { c.ExtKeyUsage = nil }), wantErr: auth.ErrUsage},
		{name: "any extended key usage only", cert: ours(func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageAny} }), wantErr: auth.ErrUsage},
		{name: "key usage without digital signature", cert: ours(func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageKeyEncipherment }), wantErr: auth.ErrUsage},
		{name: "revoked", cert: func(*testing.T) *x509.Certificate { return revoked }, wantErr: auth.ErrRevoked},
		{name: "stale CRL", cert: ours(func(c *x509.Certificate) { c.NotAfter = base.Add(30 * 24 * time.Hour) }), advance: 8 * 24 * time.Hour, wantErr: auth.ErrCRLStale},
		{name: "CRL signed by another key", cert: ours(nil), crl: func(t *testing.T) {
			crlNumber++
			writeCRL(t, f.crlPath, other.cert, other.key, crlNumber, base.Add(-time.Hour), 7*24*time.Hour)
		}, wantErr: auth.ErrCRLInvalid},
		{name: "missing grants extension", cert: ours(func(c *x509.Certificate) { c.ExtraExtensions = nil }), wantGrantsErr: auth.ErrNoGrants},
		{name: "malformed DER", cert: ours(withExt(sdaExtension(t, []byte{0x30, 0x03, 0x02, 0x01}))), wantGrantsErr: auth.ErrGrantsMalformed},
		{name: "malformed grant (relative prefix)", cert: ours(withExt(sdaExtension(t, rawGrants(t, 1, "guide", "projects", 3)))), wantGrantsErr: auth.ErrGrantsMalformed},
		{name: "trailing bytes", cert: ours(withExt(sdaExtension(t, append(slices.Clone(validGrants), 0)))), wantGrantsErr: auth.ErrGrantsTrailing},
		{name: "unknown version", cert: ours(withExt(sdaExtension(t, rawGrants(t, 2, "guide", "/projects/a", 3)))), wantGrantsErr: auth.ErrGrantsVersion},
		{name: "legacy grants without the flag", cert: ours(withExt(pkix.Extension{Id: auth.LegacyGrantsOID, Value: []byte(`{"allowed_tools": ["guide_cache_file"]}`)})), wantGrantsErr: auth.ErrNoGrants},
		{name: "two URI SANs", cert: ours(func(c *x509.Certificate) {
			c.URIs = append(c.URIs, mustURL(t, "depotfs://example.org/agent/other"))
		}), wantErr: auth.ErrSubject},
		{name: "no URI SAN", cert: ours(func(c *x509.Certificate) { c.URIs = nil; c.DNSNames = []string{"agent.example.org"} }), wantErr: auth.ErrSubject},
		{name: "URI SAN of another scheme", cert: ours(func(c *x509.Certificate) { c.URIs = []*url.URL{mustURL(t, "https://example.org/agent/a")} }), wantErr: auth.ErrSubject},
		{name: "URI SAN with a query", cert: ours(func(c *x509.Certificate) { c.URIs = []*url.URL{mustURL(t, "depotfs://example.org/agent/a?admin=1")} }), wantErr: auth.ErrSubject},
		{name: "URI SAN not under /agent/", cert: ours(func(c *x509.Certificate) { c.URIs = []*url.URL{mustURL(t, "depotfs://example.org/admin/a")} }), wantErr: auth.ErrSubject},
		{name: "tampered signature", cert: func(t *testing.T) *x509.Certificate {
			good := byCA(f.ca, nil)(t)
			der := slices.Clone(good.Raw)
			der[len(der)-3] ^= 0x40 // inside the signature value
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, wantErr: auth.ErrUntrusted},
		{name: "tampered content", cert: func(t *testing.T) *x509.Certificate {
			tmpl := agentTemplate(t, "agent")
			good, _ := f.ca.issue(t, tmpl)
			der := slices.Clone(good.Raw)
			i := bytes.Index(der, []byte("example.org/agent/agent"))
			der[i] = 'E' // the URI SAN now names eXample.org
			c, err := x509.ParseCertificate(der)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, wantErr: auth.ErrUntrusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cert := tt.cert(t)
			f.clock.Add(tt.advance)
			defer f.clock.Add(-tt.advance)
			if tt.crl != nil {
				tt.crl(t)
				defer goodCRL(t)
			}
			id, err := f.v.Verify([]*x509.Certificate{cert})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Verify = %+v, %v; want error %v", id, err, tt.wantErr)
				}
				if _, ok := errors.AsType[*auth.CertError](err); !ok {
					t.Errorf("error %T is not a *CertError", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !id.Authenticated() || id.Method != identity.MethodCert || id.Subject != cert.URIs[0].String() ||
				id.Display != cert.Subject.CommonName || id.Serial != cert.SerialNumber.Text(16) || id.Full {
				t.Errorf("identity %+v", id)
			}
			_, grantsErr := auth.CertGrants(cert, false)
			if tt.wantGrantsErr != nil {
				if len(id.Grants) != 0 || !errors.Is(grantsErr, tt.wantGrantsErr) {
					t.Errorf("grants %v (CertGrants error %v); want none because of %v", id.Grants, grantsErr, tt.wantGrantsErr)
				}
				return
			}
			want := []grant.Grant{{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}}
			if grantsErr != nil || !slices.Equal(id.Grants, want) {
				t.Errorf("grants %v (%v), want %v", id.Grants, grantsErr, want)
			}
		})
	}
}

// rawGrants encodes a grants structure without EncodeGrants's checks.
func rawGrants(t testing.TB, version int64, tool, prefix string, access int64) []byte {
	t.Helper()
	return buildGrants(version, [][3]any{{tool, prefix, access}})
}

func TestVerifyNoCertificate(t *testing.T) {
	f := newFixture(t, false)
	if _, err := f.v.Verify(nil); !errors.Is(err, auth.ErrNoCertificate) {
		t.Errorf("Verify(nil) = %v, want ErrNoCertificate", err)
	}
}

// TestVerifyLegacy shows that a pki-mcp-core certificate grants its tools
// on "/" only when legacy grants are accepted, and that depotfs grants win
// over legacy ones.
func TestVerifyLegacy(t *testing.T) {
	f := newFixture(t, true)
	legacy := pkix.Extension{Id: auth.LegacyGrantsOID, Value: []byte(`{"allowed_tools": ["guide_cache_file", "guide_read_file"]}`)}
	tmpl := agentTemplate(t, "legacy")
	tmpl.ExtraExtensions = []pkix.Extension{legacy}
	cert, _ := f.ca.issue(t, tmpl)
	id, err := f.v.Verify([]*x509.Certificate{cert})
	want := []grant.Grant{{Tool: "guide_cache_file", Prefix: "/", Access: grant.ReadWrite}, {Tool: "guide_read_file", Prefix: "/", Access: grant.ReadWrite}}
	if err != nil || !slices.Equal(id.Grants, want) {
		t.Errorf("legacy certificate: %v %v, want %v", id.Grants, err, want)
	}

	tmpl = agentTemplate(t, "both")
	tmpl.ExtraExtensions = append(tmpl.ExtraExtensions, legacy)
	cert, _ = f.ca.issue(t, tmpl)
	id, err = f.v.Verify([]*x509.Certificate{cert})
	if err != nil || len(id.Grants) != 1 || id.Grants[0].Tool != "guide" {
		t.Errorf("certificate with both: %v %v, want the depotfs grants", id.Grants, err)
	}
}

func TestNewCertVerifier(t *testing.T) {
	f := newFixture(t, false)
	leaf, _ := f.ca.issue(t, agentTemplate(t, "leaf"))
	if _, err := auth.NewCertVerifier(leaf, f.crl, nil); err == nil {
		t.Error("a leaf certificate was accepted as the client CA")
	}
	if _, err := auth.NewCertVerifier(f.ca.cert, nil, nil); err == nil {
		t.Error("a client CA without a CRL was accepted")
	}
}
