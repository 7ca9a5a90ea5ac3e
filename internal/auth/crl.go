package auth

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"sync"
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
	ca  *x509.Certificate
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	file    watchedFile
	list    *x509.RevocationList
	revoked map[string]bool // decimal serials
	err     error           // why the file is unusable, nil when list is current
}

// OpenCRL reads the CRL at path, which ca must have signed, and fails if it
// is unusable or stale now, so that a misconfiguration stops depotfs at
// start rather than refusing every agent later.
func OpenCRL(path string, ca *x509.Certificate, opts *FileOptions) (*CRL, error) {
	c := &CRL{ca: ca}
	c.now, c.log, c.file = opts.watch(path)
	if err := c.Check(big.NewInt(0)); err != nil {
		return nil, fmt.Errorf("crl %s: %w", path, err)
	}
	return c, nil
}

// Check reports whether the certificate with this serial may be used now:
// nil, or an error wrapping ErrRevoked, ErrCRLStale or ErrCRLInvalid.
func (c *CRL) Check(serial *big.Int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	c.reload(now)
	if c.err != nil {
		return c.err
	}
	if !now.Before(c.list.NextUpdate) {
		return fmt.Errorf("%w: its next update was due %s; run 'depotfs ca crl' and install the new CRL",
			ErrCRLStale, c.list.NextUpdate.UTC().Format(time.RFC3339))
	}
	if c.revoked[serial.String()] {
		return fmt.Errorf("%w: serial %x", ErrRevoked, serial)
	}
	return nil
}

// NextUpdate returns when the current CRL goes stale, or the zero time
// when none is usable.
func (c *CRL) NextUpdate() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return time.Time{}
	}
	return c.list.NextUpdate
}

// reload re-reads the file if it changed and records the outcome.
func (c *CRL) reload(now time.Time) {
	data, changed, err := c.file.poll(now)
	if err != nil {
		c.fail(fmt.Errorf("%w: %w", ErrCRLInvalid, err))
		return
	}
	if !changed {
		return
	}
	list, err := c.parse(data)
	if err != nil {
		c.fail(err)
		return
	}
	revoked := make(map[string]bool, len(list.RevokedCertificateEntries))
	for _, e := range list.RevokedCertificateEntries {
		revoked[e.SerialNumber.String()] = true
	}
	c.list, c.revoked, c.err = list, revoked, nil
	c.log.Info("CRL loaded", "crl", c.file.path, "number", list.Number, "revoked", len(revoked),
		"next_update", list.NextUpdate.UTC().Format(time.RFC3339))
}

// fail makes the CRL unusable, logging the change of state once.
func (c *CRL) fail(err error) {
	if c.err == nil || c.err.Error() != err.Error() {
		c.log.Error("CRL unusable: refusing every client certificate until it is fixed", "crl", c.file.path, "err", err)
	}
	c.err = err
	c.file.started = false // re-read the file whole once it is fixed
}

// parse decodes and verifies a CRL file's content.
func (c *CRL) parse(data []byte) (*x509.RevocationList, error) {
	der := data
	if block, _ := pem.Decode(data); block != nil {
		if block.Type != "X509 CRL" {
			return nil, fmt.Errorf("%w: PEM block %q, want X509 CRL", ErrCRLInvalid, block.Type)
		}
		der = block.Bytes
	}
	list, err := x509.ParseRevocationList(der)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCRLInvalid, err)
	}
	if !bytes.Equal(list.RawIssuer, c.ca.RawSubject) {
		return nil, fmt.Errorf("%w: issued by %q, not the client CA %q", ErrCRLInvalid, list.Issuer, c.ca.Subject)
	}
	if err := list.CheckSignatureFrom(c.ca); err != nil {
		return nil, fmt.Errorf("%w: not signed by the client CA: %w", ErrCRLInvalid, err)
	}
	if list.NextUpdate.IsZero() || !list.ThisUpdate.Before(list.NextUpdate) {
		return nil, fmt.Errorf("%w: no next update after its this update", ErrCRLInvalid)
	}
	if c.list != nil && c.list.Number != nil && (list.Number == nil || list.Number.Cmp(c.list.Number) < 0) {
		return nil, fmt.Errorf("%w: CRL number %v is older than the loaded %v", ErrCRLInvalid, list.Number, c.list.Number)
	}
	return list, nil
}
