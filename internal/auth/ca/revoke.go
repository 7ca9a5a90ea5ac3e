package ca

import (
	"bytes"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/atomicfile"
)

// revokedList is the content of revoked.json.
type revokedList struct {
	Version   int             `json:"version"`
	CRLNumber int64           `json:"crl_number"` // of the last CRL written
	Revoked   []revokedSerial `json:"revoked"`
}

type revokedSerial struct {
	Serial string    `json:"serial"` // lower-case hex
	Time   time.Time `json:"time"`
}

// Revoke adds serial to the revoked list (revoking twice keeps the first
// time) and writes a new CRL valid for DefaultCRLValidity, which servers
// pick up by themselves. It returns the CRL's path and whether the serial
// was newly revoked.
func (c *CA) Revoke(serial *big.Int, now time.Time) (string, bool, error) {
	var added bool
	err := withLock(c.dir, func() error {
		list, err := c.readRevoked()
		if err != nil {
			return err
		}
		hex := serial.Text(16)
		added = !slices.ContainsFunc(list.Revoked, func(r revokedSerial) bool { return r.Serial == hex })
		if added {
			list.Revoked = append(list.Revoked, revokedSerial{Serial: hex, Time: now.UTC()})
			if err := c.writeRevoked(list); err != nil {
				return err
			}
		}
		_, err = c.writeCRL(DefaultCRLValidity, now)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("revoke %x: %w", serial, err)
	}
	return c.CRLPath(), added, nil
}

// WriteCRL signs a new CRL of the revoked serials, valid from now for
// validity (0: DefaultCRLValidity), with the next CRL number, and writes it
// atomically to CRLPath. Servers refuse every certificate once a CRL's
// NextUpdate has passed, so run this (from cron) well before then.
func (c *CA) WriteCRL(validity time.Duration, now time.Time) (string, time.Time, error) {
	var next time.Time
	err := withLock(c.dir, func() error {
		var err error
		next, err = c.writeCRL(validity, now)
		return err
	})
	if err != nil {
		return "", time.Time{}, fmt.Errorf("write CRL: %w", err)
	}
	return c.CRLPath(), next, nil
}

// writeCRL does WriteCRL's work; the caller holds the lock.
func (c *CA) writeCRL(validity time.Duration, now time.Time) (time.Time, error) {
	if validity <= 0 {
		validity = DefaultCRLValidity
	}
	list, err := c.readRevoked()
	if err != nil {
		return time.Time{}, err
	}
	list.CRLNumber++
	tmpl := &x509.RevocationList{
		Number:     big.NewInt(list.CRLNumber),
		ThisUpdate: now.Add(-clockSkew),
		NextUpdate: now.Add(validity),
	}
	for _, r := range list.Revoked {
		s, ok := new(big.Int).SetString(r.Serial, 16)
		if !ok {
			return time.Time{}, fmt.Errorf("%s: serial %q", RevokedFile, r.Serial)
		}
		tmpl.RevokedCertificateEntries = append(tmpl.RevokedCertificateEntries,
			x509.RevocationListEntry{SerialNumber: s, RevocationTime: r.Time})
	}
	der, err := x509.CreateRevocationList(rand.Reader, tmpl, c.cert, c.key)
	if err != nil {
		return time.Time{}, err
	}
	// Record the number first: a crash between the two writes then skips a
	// number, never reuses one.
	if err := c.writeRevoked(list); err != nil {
		return time.Time{}, err
	}
	if err := atomicfile.Write(c.CRLPath(), pem.EncodeToMemory(&pem.Block{Type: "X509 CRL", Bytes: der}), 0o644); err != nil {
		return time.Time{}, err
	}
	return tmpl.NextUpdate, nil
}

func (c *CA) readRevoked() (*revokedList, error) {
	path := filepath.Join(c.dir, RevokedFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &revokedList{Version: 1, Revoked: []revokedSerial{}}, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var list revokedList
	if err := dec.Decode(&list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if list.Version != 1 {
		return nil, fmt.Errorf("%s: version %d, want 1", path, list.Version)
	}
	return &list, nil
}

func (c *CA) writeRevoked(list *revokedList) error {
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(c.dir, RevokedFile), append(data, '\n'), 0o644)
}

// ParseSerial reads a certificate serial number written in hex, as
// depotfs prints it ("5f3a…"), optionally with a 0x prefix or with colons
// between bytes as openssl prints it ("5F:3A:…").
func ParseSerial(s string) (*big.Int, error) {
	clean := strings.ToLower(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"))
	clean = strings.ReplaceAll(clean, ":", "")
	n, ok := new(big.Int).SetString(clean, 16)
	if !ok || clean == "" || n.Sign() <= 0 {
		return nil, fmt.Errorf("serial %q: want a positive hexadecimal number", s)
	}
	return n, nil
}

// SerialOf returns the serial of the PEM certificate in file, after
// checking that this CA issued it.
func (c *CA) SerialOf(file string) (*big.Int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("%s: no PEM CERTIFICATE", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := cert.CheckSignatureFrom(c.cert); err != nil {
		return nil, fmt.Errorf("%s was not issued by this CA: %w", file, err)
	}
	return cert.SerialNumber, nil
}
