package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"filippo.io/age"
)

// ageHeader starts every file age encrypts.
const ageHeader = "age-encryption.org/v1\n"

// recipientsConfig is where a backup or an export is encrypted to: age
// recipients (--recipient age1..., --recipient-file), none for a file in
// the clear.
type recipientsConfig struct {
	recipients []string
	files      []string
}

func (c *recipientsConfig) flags(fs *flag.FlagSet) {
	fs.Func("recipient", "encrypt the file to this age `recipient` (age1..., repeatable); 'depotfs restore/import --identity' or the age tool decrypts it", appendTo(&c.recipients))
	fs.Func("recipient-file", "encrypt the file to the age recipients listed in this `file`, one a line (repeatable)", appendTo(&c.files))
}

// load parses the recipients given; none gives nil.
func (c *recipientsConfig) load() ([]age.Recipient, error) {
	var out []age.Recipient
	for _, r := range c.recipients {
		rs, err := age.ParseRecipients(strings.NewReader(r))
		if err != nil {
			return nil, usageError{fmt.Errorf("--recipient %q: %w", r, err)}
		}
		out = append(out, rs...)
	}
	for _, p := range c.files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("--recipient-file: %w", err)
		}
		rs, err := age.ParseRecipients(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--recipient-file %s: %w", p, err)
		}
		out = append(out, rs...)
	}
	return out, nil
}

// encrypt returns a writer that encrypts to rs into w, and is closed to
// finish the file; without recipients it is w itself.
func encrypt(w io.Writer, rs []age.Recipient) (io.WriteCloser, error) {
	if len(rs) == 0 {
		return nopWriteCloser{w}, nil
	}
	return age.Encrypt(w, rs...)
}

// nopWriteCloser is a Writer whose Close does nothing.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// identitiesConfig is how an encrypted backup or export is decrypted: age
// identity files (--identity).
type identitiesConfig struct {
	files []string
}

func (c *identitiesConfig) flags(fs *flag.FlagSet) {
	fs.Func("identity", "age identity `file` (AGE-SECRET-KEY-..., as age-keygen writes) that decrypts a backup or export encrypted to its recipient (repeatable)", appendTo(&c.files))
}

// errNoIdentity reports an encrypted file read without --identity.
var errNoIdentity = errors.New("the file is encrypted to age recipients: give --identity with the matching age identity file")

// open returns r decrypted when it is an age file (with the identities
// given; none is an error wrapping errNoIdentity), else r as it is.
func (c *identitiesConfig) open(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(len(ageHeader))
	if err != nil || !bytes.Equal(head, []byte(ageHeader)) {
		return br, nil // not age: read as it is, errors included
	}
	if len(c.files) == 0 {
		return nil, errNoIdentity
	}
	var ids []age.Identity
	for _, p := range c.files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("--identity: %w", err)
		}
		is, err := age.ParseIdentities(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--identity %s: %w", p, err)
		}
		ids = append(ids, is...)
	}
	d, err := age.Decrypt(br, ids...)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %w", err)
	}
	return d, nil
}
