package seal

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
)

// Wrapper is a key-encryption key: it wraps and unwraps data keys and
// names itself by an id that reveals nothing about it. A KMS (AWS KMS,
// Vault transit, GCP KMS) implements it with its encrypt and decrypt
// calls; the stores see only this interface. Implementations must be safe
// for concurrent use.
type Wrapper interface {
	// KeyID names the key-encryption key, for the record and for errors.
	KeyID() string
	// Wrap encrypts a data key.
	Wrap(ctx context.Context, dataKey []byte) ([]byte, error)
	// Unwrap decrypts what Wrap returned; another key's wrapping fails.
	Unwrap(ctx context.Context, wrapped []byte) ([]byte, error)
}

// KeySize is the size in bytes of a key-encryption key and of a data key.
const KeySize = 32

// wrapAD binds a wrapped data key to its purpose, so the key file's key
// unwraps nothing else it might one day wrap.
var wrapAD = []byte("depotfs data key v1")

// FileKey is a key-encryption key held in memory, read from a key file or
// the environment. It is safe for concurrent use.
type FileKey struct {
	id  string
	kek [KeySize]byte
}

var _ Wrapper = (*FileKey)(nil)

// ParseKey reads a key-encryption key from its text form: 64 hexadecimal
// digits (32 bytes), surrounding white space ignored, as NewKeyText
// writes and `openssl rand -hex 32` prints.
func ParseKey(text []byte) (*FileKey, error) {
	s := strings.TrimSpace(string(text))
	if len(s) != 2*KeySize {
		return nil, fmt.Errorf("key: want %d hexadecimal digits, got %d characters", 2*KeySize, len(s))
	}
	var k FileKey
	if _, err := hex.Decode(k.kek[:], []byte(s)); err != nil {
		return nil, fmt.Errorf("key: want %d hexadecimal digits: %w", 2*KeySize, err)
	}
	m := hmac.New(sha256.New, k.kek[:])
	m.Write([]byte("depotfs key id v1"))
	k.id = "kek-" + hex.EncodeToString(m.Sum(nil)[:8])
	return &k, nil
}

// LoadKeyFile reads a key file (see ParseKey). Like ssh with its private
// keys, it refuses a file that its group or others may read or write.
func LoadKeyFile(path string) (*FileKey, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("key file %s: mode %#o lets others read it: chmod 600 it", path, perm)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("key file: %w", err)
	}
	k, err := ParseKey(text)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

// NewKeyText returns a new random key-encryption key in the text form
// ParseKey reads, ending in a newline.
func NewKeyText() []byte {
	return []byte(hex.EncodeToString(randomBytes(KeySize)) + "\n")
}

// KeyID names the key: a prefix of an HMAC of a fixed string under it,
// which tells keys apart without revealing them.
func (k *FileKey) KeyID() string { return k.id }

// Wrap seals dataKey under the key with a random nonce.
func (k *FileKey) Wrap(_ context.Context, dataKey []byte) ([]byte, error) {
	a, err := chacha20poly1305.NewX(k.kek[:])
	if err != nil {
		return nil, err
	}
	nonce := randomBytes(a.NonceSize())
	return a.Seal(nonce, nonce, dataKey, wrapAD), nil
}

// Unwrap opens what Wrap sealed; another key's wrapping fails with
// ErrWrongKey.
func (k *FileKey) Unwrap(_ context.Context, wrapped []byte) ([]byte, error) {
	a, err := chacha20poly1305.NewX(k.kek[:])
	if err != nil {
		return nil, err
	}
	if len(wrapped) < a.NonceSize()+a.Overhead() {
		return nil, fmt.Errorf("unwrap data key: %w", ErrWrongKey)
	}
	n := a.NonceSize()
	dk, err := a.Open(nil, wrapped[:n], wrapped[n:], wrapAD)
	if err != nil {
		return nil, fmt.Errorf("unwrap data key: %w", ErrWrongKey)
	}
	return dk, nil
}

// randomBytes returns n bytes from the system's random source, which
// never fails on the systems depotfs runs on (crypto/rand panics
// rather than return predictable bytes).
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
