package ca

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"github.com/depotfs/depotfs/internal/atomicfile"
	"github.com/depotfs/depotfs/internal/auth"
)

// File names inside a CA directory.
const (
	CertFile    = "ca.crt"
	KeyFile     = "ca.key"
	CRLFile     = "crl.pem"
	RevokedFile = "revoked.json"
	lockFile    = ".lock"
)

// Defaults.
const (
	DefaultCAValidity     = 10 * 365 * 24 * time.Hour
	DefaultAgentValidity  = 7 * 24 * time.Hour
	DefaultServerValidity = 90 * 24 * time.Hour
	DefaultCRLValidity    = 30 * 24 * time.Hour
	// clockSkew backdates NotBefore and ThisUpdate so that a peer whose
	// clock is a little behind accepts them.
	clockSkew = 5 * time.Minute
)

// ErrExists is returned by Init for a directory that already holds a CA.
var ErrExists = errors.New("a CA already exists there")

// CA is an opened CA directory. It is safe for concurrent use.
type CA struct {
	dir  string
	cert *x509.Certificate
	key  crypto.Signer
}

// Init creates a CA named name in dir (created 0700 if missing): an ECDSA
// P-256 key (mode 0600), a self-signed certificate valid for validity (0:
// DefaultCAValidity) from now, and an empty CRL valid for DefaultCRLValidity. It refuses a
// directory that already has a CA key or certificate (ErrExists).
func Init(dir, name string, validity time.Duration, now time.Time) (*CA, error) {
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("ca init: %w", err)
	}
	var c *CA
	err := withLock(dir, func() error {
		for _, f := range []string{CertFile, KeyFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return fmt.Errorf("%w: %s", ErrExists, filepath.Join(dir, f))
			}
		}
		tmpl := &x509.Certificate{
			Subject:               pkix.Name{CommonName: name},
			IsCA:                  true,
			BasicConstraintsValid: true,
			MaxPathLenZero:        true, // agents' certificates only, no intermediate CAs
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		}
		is, key, err := newCert(tmpl, nil, nil, now, validity)
		if err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, KeyFile), is.KeyPEM, 0o600); err != nil {
			return err
		}
		if err := atomicfile.Write(filepath.Join(dir, CertFile), is.CertPEM, 0o644); err != nil {
			return err
		}
		c = &CA{dir: dir, cert: is.Cert, key: key}
		_, err = c.writeCRL(DefaultCRLValidity, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ca init %s: %w", dir, err)
	}
	return c, nil
}

// Open reads the CA in dir.
func Open(dir string) (*CA, error) {
	cert, err := auth.LoadCACert(filepath.Join(dir, CertFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open CA: %w (run 'depotfs ca init' first)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("open CA: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, KeyFile))
	if err != nil {
		return nil, fmt.Errorf("open CA: %w", err)
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("open CA: %s: want a PEM PRIVATE KEY", filepath.Join(dir, KeyFile))
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("open CA: %s: %w", filepath.Join(dir, KeyFile), err)
	}
	key, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("open CA: %s: key cannot sign", filepath.Join(dir, KeyFile))
	}
	if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(cert.PublicKey) {
		return nil, fmt.Errorf("open CA: %s does not belong to %s", KeyFile, CertFile)
	}
	return &CA{dir: dir, cert: cert, key: key}, nil
}

// Cert returns the CA certificate.
func (c *CA) Cert() *x509.Certificate { return c.cert }

// Dir returns the CA directory.
func (c *CA) Dir() string { return c.dir }

// CRLPath returns the path of the CA's current CRL.
func (c *CA) CRLPath() string { return filepath.Join(c.dir, CRLFile) }

// newCert makes a certificate of tmpl for a fresh ECDSA P-256 key, with
// a random positive 127-bit serial (RFC 5280 allows up to 20 octets;
// randomness makes serials unguessable), valid from now (backdated for
// clock skew) for validity, signed by parent's key, or self-signed when
// parent is nil. It returns the certificate and its key.
func newCert(tmpl, parent *x509.Certificate, parentKey crypto.Signer, now time.Time, validity time.Duration) (*Issued, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // crypto/rand.Reader never fails
	tmpl.SerialNumber = serial.Add(serial, big.NewInt(1))
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-clockSkew), now.Add(validity)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return &Issued{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}, key, nil
}

// withLock runs fn holding the CA directory's lock.
func withLock(dir string, fn func() error) error {
	return atomicfile.Locked(filepath.Join(dir, lockFile), fn)
}
