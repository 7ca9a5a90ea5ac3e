package auth

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"
)

// ServerConfig returns the TLS configuration of depotfs's HTTPS listener:
// TLS 1.3 only, cert as the server's certificate, HTTP/2 and HTTP/1.1 by
// ALPN. With certs non-nil, clients are asked for a certificate (the CA's
// name is sent as a hint) and certs verifies it in every handshake, new or
// resumed; requireCert refuses a handshake without one (set it when no
// bearer tokens are configured). now is the clock (nil: time.Now).
//
// Go's own client-certificate verification is left off on purpose
// (RequestClientCert): CertVerifier does all of it, including what Go does
// not check (CA certificates, a missing extended key usage, revocation),
// so one function decides at the handshake and at every request.
func ServerConfig(cert tls.Certificate, certs *CertVerifier, requireCert bool, now func() time.Time) *tls.Config {
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		Time:         now,
	}
	if certs != nil {
		cfg.ClientAuth = tls.RequestClientCert
		cfg.ClientCAs = certs.roots
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			return certs.VerifyConnection(cs, requireCert)
		}
	}
	return cfg
}

// LoadCACert reads the one CA certificate in the PEM file at path. A file
// with several certificates is refused: depotfs trusts a single client CA,
// whose CRL covers every certificate it accepts.
func LoadCACert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	var certs []*x509.Certificate
	for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("client CA %s: %w", path, err)
		}
		certs = append(certs, c)
	}
	switch {
	case len(certs) == 0:
		return nil, fmt.Errorf("client CA %s: no PEM CERTIFICATE", path)
	case len(certs) > 1:
		return nil, fmt.Errorf("client CA %s: %d certificates; depotfs trusts exactly one client CA", path, len(certs))
	case !certs[0].IsCA:
		return nil, fmt.Errorf("client CA %s: not a CA certificate", path)
	}
	return certs[0], nil
}
