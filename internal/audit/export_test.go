package audit

import (
	"crypto/sha256"
	"encoding/hex"
)

// File is the file interface a Log writes to, for tests that inject
// failures.
type File = file

// WrapFile replaces l's current file with wrap(current).
func WrapFile(l *Log, wrap func(File) File) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f = wrap(l.f)
}

// HashLine turns a record body (JSON without "hash") into a full line with
// its hash, as an attacker who knows the format could.
func HashLine(body string) string {
	sum := sha256.Sum256([]byte(body))
	return body[:len(body)-1] + `,"hash":"` + hex.EncodeToString(sum[:]) + `"}`
}

// WriteCheckpoint points the checkpoint of the log at path to seq and
// hash, as depotfs would have, for building logs of older versions.
func WriteCheckpoint(path string, seq uint64, hash string) error {
	key, err := loadKey(path, true)
	if err != nil {
		return err
	}
	cp, err := openCheckpoint(path, key, 0, false)
	if err != nil {
		return err
	}
	if err := cp.write(seq, hash); err != nil {
		return err
	}
	if err := cp.write(seq, hash); err != nil {
		return err
	}
	return cp.f.Close()
}

// ReadCheckpoint returns the seq and hash the checkpoint of the log at path
// names.
func ReadCheckpoint(path string) (uint64, string, error) {
	key, err := loadKey(path, true)
	if err != nil {
		return 0, "", err
	}
	cp, _, _, err := readCheckpoint(path, key)
	return cp.Seq, cp.Hash, err
}
