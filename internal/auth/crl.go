package auth

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"math/big"
	"time"
)

// CRL is the certificate revocation list of one CA, read from a file (PEM
// or DER) and read again when the file changes: every Check costs one stat,
// and the file is re-read when the stat differs or Recheck has passed.
//
// It fails closed: while the file is missing, unreadable, not signed by the
// CA, older (by CRL number) than one already loaded, or past its
// NextUpdate, Check refuses every certificate. It is safe for concurrent
// use and owns no goroutine.
type CRL struct {
	w *watched[crlList]
}

// crlList is a verified CRL with its revoked serials (decimal).
type crlList struct {
	*x509.RevocationList
	revoked map[string]bool
}

// OpenCRL reads the CRL at path, which ca must have signed, and fails if it
// is unusable or stale now, so that a misconfiguration stops depotfs at
// start rather than refusing every agent later.
func OpenCRL(path string, ca *x509.Certificate, opts *FileOptions) (*CRL, error) {
	w := newWatched[crlList](path, opts)
	w.name, w.refusal, w.unreadable = "CRL", "CRL unusable: refusing every client certificate until it is fixed", ErrCRLInvalid
	w.parse = func(data []byte, old crlList) (crlList, error) { return parseCRL(data, ca, old.RevocationList) }
	w.loaded = func(l crlList) []any {
		return []any{"number", l.Number, "revoked", len(l.revoked), "next_update", l.NextUpdate.UTC().Format(time.RFC3339)}
	}
	c := &CRL{w: w}
	if err := c.Check(big.NewInt(0)); err != nil {
		return nil, fmt.Errorf("crl %s: %w", path, err)
	}
	return c, nil
}

// Check reports whether the certificate with this serial may be used now:
// nil, or an error wrapping ErrRevoked, ErrCRLStale or ErrCRLInvalid.
func (c *CRL) Check(serial *big.Int) error {
	list, now, err := c.w.get(false)
	if err != nil {
		return err
	}
	if !now.Before(list.NextUpdate) {
		return fmt.Errorf("%w: its next update was due %s; run 'depotfs ca crl' and install the new CRL",
			ErrCRLStale, list.NextUpdate.UTC().Format(time.RFC3339))
	}
	if list.revoked[serial.String()] {
		return fmt.Errorf("%w: serial %x", ErrRevoked, serial)
	}
	return nil
}

// NextUpdate returns when the current CRL goes stale, or the zero time
// when none is usable.
func (c *CRL) NextUpdate() time.Time {
	list, _, err := c.w.get(false)
	if err != nil {
		return time.Time{}
	}
	return list.NextUpdate
}

// Reload reads the CRL file now, whatever its stat says (depotfs serve
// calls it on SIGHUP), and returns why it is unusable, or nil. An
// unusable CRL refuses every certificate, as on any other read.
func (c *CRL) Reload() error {
	_, _, err := c.w.get(true)
	return err
}

// parseCRL decodes a CRL file's content and verifies it against ca and
// the CRL loaded before it (nil if none).
func parseCRL(data []byte, ca *x509.Certificate, old *x509.RevocationList) (crlList, error) {
	der := data
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "X509 CRL" {
			return crlList{}, fmt.Errorf("%w: PEM block %q, want X509 CRL", ErrCRLInvalid, block.Type)
		}
		der = block.Bytes
	}
	list, err := x509.ParseRevocationList(der)
	if err != nil {
		return crlList{}, fmt.Errorf("%w: %w", ErrCRLInvalid, err)
	}
	if !bytes.Equal(list.RawIssuer, ca.RawSubject) {
		return crlList{}, fmt.Errorf("%w: issued by %q, not the client CA %q", ErrCRLInvalid, list.Issuer, ca.Subject)
	}
	if err := list.CheckSignatureFrom(ca); err != nil {
		return crlList{}, fmt.Errorf("%w: not signed by the client CA: %w", ErrCRLInvalid, err)
	}
	if list.NextUpdate.IsZero() || !list.ThisUpdate.Before(list.NextUpdate) {
		return crlList{}, fmt.Errorf("%w: no next update after its this update", ErrCRLInvalid)
	}
	if old != nil && old.Number != nil && (list.Number == nil || list.Number.Cmp(old.Number) < 0) {
		return crlList{}, fmt.Errorf("%w: CRL number %v is older than the loaded %v", ErrCRLInvalid, list.Number, old.Number)
	}
	revoked := make(map[string]bool, len(list.RevokedCertificateEntries))
	for _, e := range list.RevokedCertificateEntries {
		revoked[e.SerialNumber.String()] = true
	}
	return crlList{list, revoked}, nil
}
