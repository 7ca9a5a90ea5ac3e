package seal

import (
	"context"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Cipher names the AEAD a Record's data key seals chunks with.
const Cipher = "xchacha20-poly1305"

// Record is a data key as a store keeps it: wrapped, beside the id of the
// key-encryption key that wraps it. Its JSON form is what Marshal writes.
type Record struct {
	V       int    `json:"v"`
	Cipher  string `json:"cipher"`
	ID      string `json:"id"`     // the data key's id (Key.ID)
	KEKID   string `json:"kek_id"` // Wrapper.KeyID of the wrapping key
	Wrapped []byte `json:"wrapped"`
}

// Marshal encodes r for the store's metadata.
func (r Record) Marshal() []byte {
	b, _ := json.Marshal(r) // a struct of strings and bytes always encodes
	return b
}

// ParseRecord decodes what Marshal wrote.
func ParseRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("seal record: %w", err)
	}
	if r.V != 1 || r.Cipher != Cipher || r.KEKID == "" || len(r.Wrapped) == 0 {
		return Record{}, fmt.Errorf("seal record: version %d, cipher %q: this build reads version 1, %s", r.V, r.Cipher, Cipher)
	}
	return r, nil
}

// Key is an unwrapped data key: it seals and opens chunks and computes
// content addresses. It is safe for concurrent use.
type Key struct {
	id   string
	aead cipher.AEAD
	addr []byte // the HMAC key of Address
}

// NewRecord makes a new random data key and returns it with its record,
// wrapped by w.
func NewRecord(ctx context.Context, w Wrapper) (*Key, Record, error) {
	dk := randomBytes(KeySize)
	k, err := newKey(dk)
	if err != nil {
		return nil, Record{}, err
	}
	wrapped, err := w.Wrap(ctx, dk)
	if err != nil {
		return nil, Record{}, fmt.Errorf("wrap data key under %s: %w", w.KeyID(), err)
	}
	return k, Record{V: 1, Cipher: Cipher, ID: k.id, KEKID: w.KeyID(), Wrapped: wrapped}, nil
}

// Open unwraps r's data key with w. A w other than the key that wrapped
// it fails with an error wrapping ErrWrongKey that names both ids.
func Open(ctx context.Context, w Wrapper, r Record) (*Key, error) {
	k, _, err := unwrap(ctx, w, r)
	return k, err
}

// Rewrap returns r with its data key wrapped by next instead of cur: the
// rotation of the key-encryption key, one record whatever the depot
// holds. The content and its data key stay as they are.
func Rewrap(ctx context.Context, r Record, cur, next Wrapper) (Record, error) {
	_, dk, err := unwrap(ctx, cur, r)
	if err != nil {
		return Record{}, err
	}
	wrapped, err := next.Wrap(ctx, dk)
	if err != nil {
		return Record{}, fmt.Errorf("wrap data key under %s: %w", next.KeyID(), err)
	}
	r.KEKID, r.Wrapped = next.KeyID(), wrapped
	if _, err := Open(ctx, next, r); err != nil {
		return Record{}, fmt.Errorf("rewrapped data key does not open: %w", err)
	}
	return r, nil
}

// unwrap returns r's data key, as a Key and as bytes, unwrapped by w.
func unwrap(ctx context.Context, w Wrapper, r Record) (*Key, []byte, error) {
	if w.KeyID() != r.KEKID {
		return nil, nil, fmt.Errorf("%w: the depot's data key is wrapped by key %s, the key given is %s", ErrWrongKey, r.KEKID, w.KeyID())
	}
	dk, err := w.Unwrap(ctx, r.Wrapped)
	if err != nil {
		return nil, nil, fmt.Errorf("data key %s under key %s: %w", r.ID, r.KEKID, err)
	}
	k, err := newKey(dk)
	if err != nil {
		return nil, nil, err
	}
	if k.id != r.ID {
		return nil, nil, fmt.Errorf("data key under key %s: id %s, the record says %s: %w", r.KEKID, k.id, r.ID, ErrWrongKey)
	}
	return k, dk, nil
}

// newKey derives the AEAD and address keys from a data key.
func newKey(dk []byte) (*Key, error) {
	if len(dk) != KeySize {
		return nil, fmt.Errorf("data key: %d bytes, want %d: %w", len(dk), KeySize, ErrWrongKey)
	}
	ck, err := hkdf.Key(sha256.New, dk, nil, "depotfs chunk v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	ak, err := hkdf.Key(sha256.New, dk, nil, "depotfs address v1", sha256.Size)
	if err != nil {
		return nil, err
	}
	a, err := chacha20poly1305.NewX(ck)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, dk)
	m.Write([]byte("depotfs data key id v1"))
	return &Key{id: "dk-" + hex.EncodeToString(m.Sum(nil)[:8]), aead: a, addr: ak}, nil
}

// ID names the data key without revealing it: hosts sharing a depot
// compare it.
func (k *Key) ID() string { return k.id }

// Address is the keyed address of content whose plain SHA-256 is sum:
// HMAC-SHA-256 under a key derived from the data key. Equal content has
// equal addresses, so a store still deduplicates, but without the key an
// address neither confirms a guessed file nor matches another depot's.
func (k *Key) Address(sum [sha256.Size]byte) [sha256.Size]byte {
	m := hmac.New(sha256.New, k.addr)
	m.Write(sum[:])
	var a [sha256.Size]byte
	m.Sum(a[:0])
	return a
}
