package auth_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
)

// base is the time at which the tests' certificates are valid.
var base = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

// clock is a settable clock, safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: base} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// quiet is a logger that discards everything.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// testCA is a CA built in the test.
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newCA returns a CA named cn, valid a year around base.
func newCA(t testing.TB, cn string) *testCA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             base.Add(-365 * 24 * time.Hour),
		NotAfter:              base.Add(365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

var serials = struct {
	sync.Mutex
	n int64
}{n: 100}

// agentTemplate is a valid agent certificate: URI SAN, ClientAuth, a day
// around base, grants guide:/projects/a:rw.
func agentTemplate(t testing.TB, name string) *x509.Certificate {
	t.Helper()
	serials.Lock()
	serials.n++
	serial := big.NewInt(serials.n)
	serials.Unlock()
	ext, err := auth.GrantsExtension([]grant.Grant{{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}})
	if err != nil {
		t.Fatal(err)
	}
	return &x509.Certificate{
		SerialNumber:    serial,
		Subject:         pkix.Name{CommonName: name + " display"},
		NotBefore:       base.Add(-time.Hour),
		NotAfter:        base.Add(24 * time.Hour),
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtKeyUsage:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		URIs:            []*url.URL{mustURL(t, "depotfs://example.org/agent/"+name)},
		ExtraExtensions: []pkix.Extension{ext},
	}
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// issue signs tmpl with the CA for a fresh key and returns the parsed
// certificate and its key.
func (ca *testCA) issue(t testing.TB, tmpl *x509.Certificate) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// writeCRL writes a PEM CRL signed by signer (as issuer) to path,
// revoking serials, valid from thisUpdate for validity.
func writeCRL(t testing.TB, path string, issuer *x509.Certificate, signer crypto.Signer, number int64, thisUpdate time.Time, validity time.Duration, revoked ...*big.Int) {
	t.Helper()
	tmpl := &x509.RevocationList{Number: big.NewInt(number), ThisUpdate: thisUpdate, NextUpdate: thisUpdate.Add(validity)}
	for _, s := range revoked {
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries, x509.RevocationListEntry{SerialNumber: s, RevocationTime: thisUpdate})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, issuer, signer)
	if err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// sdaExtension builds a subjectDirectoryAttributes extension holding one
// grants attribute whose SET holds value exactly as given.
func sdaExtension(t testing.TB, value []byte) pkix.Extension {
	t.Helper()
	oid, err := x509.ParseOID(auth.GrantsOID)
	if err != nil {
		t.Fatal(err)
	}
	oidDER, _ := oid.MarshalBinary()
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(oidDER) })
			b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) { b.AddBytes(value) })
		})
	})
	return pkix.Extension{Id: auth.SubjectDirectoryAttributesOID, Value: b.BytesOrPanic()}
}

// fixture is a CA, its CRL file and a verifier over them, on a test clock.
type fixture struct {
	ca      *testCA
	clock   *clock
	crlPath string
	crl     *auth.CRL
	v       *auth.CertVerifier
}

func newFixture(t testing.TB, legacy bool) *fixture {
	t.Helper()
	f := &fixture{ca: newCA(t, "depotfs test CA"), clock: newClock(), crlPath: filepath.Join(t.TempDir(), "crl.pem")}
	writeCRL(t, f.crlPath, f.ca.cert, f.ca.key, 1, base.Add(-time.Hour), 7*24*time.Hour)
	var err error
	f.crl, err = auth.OpenCRL(f.crlPath, f.ca.cert, &auth.FileOptions{Now: f.clock.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	f.v, err = auth.NewCertVerifier(f.ca.cert, f.crl, &auth.CertOptions{Now: f.clock.Now, AcceptLegacyGrants: legacy, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}
