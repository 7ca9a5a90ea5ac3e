package auth

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
)

// CertOptions configure a CertVerifier. The zero value works.
type CertOptions struct {
	// Now is the clock; nil means time.Now. It should be the CRL's clock.
	Now func() time.Time
	// AcceptLegacyGrants reads grants from pki-mcp-core certificates
	// (LegacyGrantsOID) when a certificate has no depotfs grants.
	AcceptLegacyGrants bool
	// Logger receives certificates whose grants are unusable; nil means
	// slog.Default().
	Logger *slog.Logger
}

// CertVerifier decides whether a client certificate authenticates an
// agent, and who that agent is. It trusts one CA and consults that CA's
// CRL. It is safe for concurrent use.
type CertVerifier struct {
	ca     *x509.Certificate
	roots  *x509.CertPool
	crl    *CRL
	now    func() time.Time
	legacy bool
	log    *slog.Logger
}

// NewCertVerifier returns a verifier for client certificates issued
// directly by ca (no intermediates) and checked against crl, which must be
// ca's. opts may be nil.
func NewCertVerifier(ca *x509.Certificate, crl *CRL, opts *CertOptions) (*CertVerifier, error) {
	if !ca.IsCA || !ca.BasicConstraintsValid {
		return nil, fmt.Errorf("client CA %q is not a CA certificate", ca.Subject)
	}
	if crl == nil {
		return nil, errors.New("client CA without a CRL: revocation would be impossible")
	}
	var o CertOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return &CertVerifier{ca: ca, roots: roots, crl: crl, now: o.Now, legacy: o.AcceptLegacyGrants, log: o.Logger}, nil
}

// CertError is a refused client certificate together with what it claimed
// to be, for the audit log.
type CertError struct {
	Subject string // the first URI SAN, unverified
	Serial  string // lower-case hex
	Resumed bool   // refused while resuming a TLS session
	Err     error
}

func (e *CertError) Error() string {
	if e.Serial == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("client certificate %s (serial %s): %v", e.Subject, e.Serial, e.Err)
}

// presented reports whether the error is about a certificate the client
// presented (rather than its absence).
func (e *CertError) presented() bool { return e.Serial != "" }

func (e *CertError) Unwrap() error { return e.Err }

// Verify checks certs, as a TLS peer sent them (leaf first; any further
// certificates are ignored: the leaf must be issued by the CA itself), and
// returns the agent's identity: Method cert, Subject its URI SAN, Display
// its CN, Serial its serial in hex, and its grants. In this order it
// refuses a certificate that is not issued by the CA (ErrUntrusted), is
// outside its validity (ErrExpired), is a CA or lacks the ClientAuth
// extended key usage or the digital signature key usage (ErrUsage), does
// not carry exactly one valid depotfs URI SAN (ErrSubject), or that the CRL
// refuses (ErrRevoked, ErrCRLStale, ErrCRLInvalid); the error is a
// *CertError.
//
// A certificate that passes but whose grants are missing or invalid
// authenticates with no grants (see CertGrants); that is logged as a
// warning.
func (v *CertVerifier) Verify(certs []*x509.Certificate) (identity.Identity, error) {
	id, grantsErr, err := v.verify(certs)
	if err == nil && grantsErr != nil {
		v.log.Warn("client certificate carries no usable grants: authenticated, but it may do nothing",
			"identity", id.Subject, "serial", id.Serial, "err", grantsErr)
	}
	return id, err
}

// VerifyConnection is a tls.Config.VerifyConnection that runs Verify on
// the peer's certificates of every handshake, new or resumed. With
// required false, a connection without a certificate passes (its requests
// must then carry a bearer token).
func (v *CertVerifier) VerifyConnection(cs tls.ConnectionState, required bool) error {
	if len(cs.PeerCertificates) == 0 && !required {
		return nil
	}
	_, _, err := v.verify(cs.PeerCertificates)
	if ce, ok := errors.AsType[*CertError](err); ok {
		ce.Resumed = cs.DidResume
	}
	return err
}

func (v *CertVerifier) verify(certs []*x509.Certificate) (id identity.Identity, grantsErr, err error) {
	if len(certs) == 0 {
		return identity.Identity{}, nil, &CertError{Err: ErrNoCertificate}
	}
	leaf := certs[0]
	ce := &CertError{Serial: leaf.SerialNumber.Text(16)}
	if len(leaf.URIs) > 0 {
		ce.Subject = leaf.URIs[0].String()
	}
	refuse := func(err error) (identity.Identity, error, error) {
		ce.Err = err
		return identity.Identity{}, nil, ce
	}
	if !bytes.Equal(leaf.RawIssuer, v.ca.RawSubject) {
		return refuse(fmt.Errorf("%w: issued by %q", ErrUntrusted, leaf.Issuer))
	}
	if err := leaf.CheckSignatureFrom(v.ca); err != nil {
		return refuse(fmt.Errorf("%w: %w", ErrUntrusted, err))
	}
	now := v.now()
	if now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
		return refuse(fmt.Errorf("%w: valid from %s to %s", ErrExpired,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339)))
	}
	if leaf.IsCA {
		return refuse(fmt.Errorf("%w: a CA certificate", ErrUsage))
	}
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
		return refuse(fmt.Errorf("%w: no ClientAuth extended key usage", ErrUsage))
	}
	if leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return refuse(fmt.Errorf("%w: key usage without digital signature", ErrUsage))
	}
	// The library's own verification, for everything not checked above
	// (unhandled critical extensions, name constraints, key sizes).
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: v.roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return refuse(fmt.Errorf("%w: %w", ErrUntrusted, err))
	}
	if len(leaf.URIs) != 1 {
		return refuse(fmt.Errorf("%w: %d URI SANs, want exactly one", ErrSubject, len(leaf.URIs)))
	}
	subject, err := parseAgentURI(leaf.URIs[0])
	if err != nil {
		return refuse(err)
	}
	if err := v.crl.Check(leaf.SerialNumber); err != nil {
		return refuse(err)
	}
	grants, grantsErr := CertGrants(leaf, v.legacy) // nil on any error
	return identity.Identity{
		Transport: "http",
		Subject:   subject,
		Method:    identity.MethodCert,
		Display:   leaf.Subject.CommonName,
		Serial:    ce.Serial,
		Grants:    grants,
	}, grantsErr, nil
}
