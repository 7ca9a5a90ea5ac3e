package ca

import (
	"cmp"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
)

// Issued is a new certificate and its private key, both PEM.
type Issued struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte // PKCS #8; keep it 0600
}

// AgentRequest describes an agent certificate.
type AgentRequest struct {
	Name     string        // the agent's name: CN and the last element of the URI SAN
	Domain   string        // the URI SAN's domain; "" means auth.LocalDomain
	Grants   []grant.Grant // what the agent may do
	Validity time.Duration // 0 means DefaultAgentValidity
}

// IssueAgent issues a client certificate for an agent: a fresh ECDSA
// P-256 key, CN Name, the one URI SAN depotfs://<Domain>/agent/<Name>, the
// ClientAuth extended key usage and the grants extension, valid from now
// (backdated a few minutes for clock skew) for Validity.
func (c *CA) IssueAgent(req AgentRequest, now time.Time) (*Issued, error) {
	req.Domain = cmp.Or(req.Domain, auth.LocalDomain)
	if req.Validity <= 0 {
		req.Validity = DefaultAgentValidity
	}
	u, err := auth.AgentURI(req.Domain, req.Name)
	if err != nil {
		return nil, fmt.Errorf("issue agent certificate: %w", err)
	}
	ext, err := auth.GrantsExtension(req.Grants)
	if err != nil {
		return nil, fmt.Errorf("issue agent certificate: %w", err)
	}
	tmpl := &x509.Certificate{
		Subject:         pkix.Name{CommonName: req.Name},
		URIs:            []*url.URL{u},
		KeyUsage:        x509.KeyUsageDigitalSignature,
		ExtKeyUsage:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		ExtraExtensions: []pkix.Extension{ext},
	}
	is, err := c.issue(tmpl, now, req.Validity)
	if err != nil {
		return nil, fmt.Errorf("issue agent certificate: %w", err)
	}
	return is, nil
}

// IssueServer issues a certificate for depotfs's HTTPS listener (serve
// --tls-cert) naming hosts, each a DNS name or an IP address, with the
// ServerAuth extended key usage. Clients verify it with the CA
// certificate.
func (c *CA) IssueServer(hosts []string, validity time.Duration, now time.Time) (*Issued, error) {
	if len(hosts) == 0 {
		return nil, errors.New("issue server certificate: no host names")
	}
	if validity <= 0 {
		validity = DefaultServerValidity
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: hosts[0]},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	is, err := c.issue(tmpl, now, validity)
	if err != nil {
		return nil, fmt.Errorf("issue server certificate: %w", err)
	}
	return is, nil
}

// issue signs tmpl for a fresh key, valid from now for validity, which
// must end before the CA's own validity.
func (c *CA) issue(tmpl *x509.Certificate, now time.Time, validity time.Duration) (*Issued, error) {
	if end := now.Add(validity); end.After(c.cert.NotAfter) {
		return nil, fmt.Errorf("validity ends %s, after the CA's own (%s)", end.Format(time.RFC3339), c.cert.NotAfter.Format(time.RFC3339))
	}
	is, _, err := newCert(tmpl, c.cert, c.key, now, validity)
	return is, err
}
