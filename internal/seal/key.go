package seal

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// Cipher names the AEAD a Record's data key seals chunks with.
const Cipher = "xchacha20-poly1305"

// Record versions: a version 1 record's store names content by its plain
// SHA-256; a version 2 record's by Key.Address, under an address key the
// record holds wrapped beside the data key (Key.Keyed). A build that reads
// only version 1 refuses version 2 rather than look content up by the
// plain hash and find none.
const (
	recordPlain = 1
	recordKeyed = 2
)

// Record is a data key as a store keeps it: wrapped, beside the id of the
// key-encryption key that wraps it. Its JSON form is what Marshal writes.
type Record struct {
	V       int    `json:"v"`
	Cipher  string `json:"cipher"`
	ID      string `json:"id"`     // the data key's id (Key.ID)
	KEKID   string `json:"kek_id"` // Wrapper.KeyID of the wrapping key
	Wrapped []byte `json:"wrapped"`
	// Addr is the address key, wrapped by the same key-encryption key
	// (version 2 only). It is kept apart from the data key so that a new
	// data key (a reencryption) keeps the addresses content is stored
	// under.
	Addr []byte `json:"addr,omitempty"`
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
	if (r.V != recordPlain && r.V != recordKeyed) || r.Cipher != Cipher || r.KEKID == "" || len(r.Wrapped) == 0 ||
		(r.V == recordKeyed) != (len(r.Addr) > 0) {
		return Record{}, fmt.Errorf("seal record: version %d, cipher %q: this build reads versions 1 and 2, %s", r.V, r.Cipher, Cipher)
	}
	return r, nil
}

// Key is an unwrapped data key: it seals and opens chunks and computes
// content addresses. It is safe for concurrent use.
type Key struct {
	id    string
	aead  cipher.AEAD
	addr  []byte       // the HMAC key of Address
	keyed bool         // the store names content by Address (a version 2 record)
	sums  cipher.Block // AES-256 under a key derived from addr (SealSum)
	recs  cipher.AEAD  // XChaCha20-Poly1305 under a key derived from addr (SealRecord)
}

// NewRecord makes a new random data key and returns it with its record,
// wrapped by w: a version 1 record, whose store names content by its
// plain SHA-256 (Keyed false).
func NewRecord(ctx context.Context, w Wrapper) (*Key, Record, error) {
	dk := randomBytes(KeySize)
	k, err := newKey(dk, nil)
	if err != nil {
		return nil, Record{}, err
	}
	wrapped, err := w.Wrap(ctx, dk)
	if err != nil {
		return nil, Record{}, fmt.Errorf("wrap data key under %s: %w", w.KeyID(), err)
	}
	return k, Record{V: recordPlain, Cipher: Cipher, ID: k.id, KEKID: w.KeyID(), Wrapped: wrapped}, nil
}

// NewKeyedRecord is NewRecord for a store that names content by
// Key.Address (Keyed true): a version 2 record, holding the address key,
// derived from the new data key, wrapped by w too.
func NewKeyedRecord(ctx context.Context, w Wrapper) (*Key, Record, error) {
	dk := randomBytes(KeySize)
	ak, err := hkdf.Key(sha256.New, dk, nil, "depotfs address v1", sha256.Size)
	if err != nil {
		return nil, Record{}, err
	}
	return keyedRecord(ctx, w, dk, ak)
}

// Renew makes a new random data key to replace k (a reencryption) and
// returns it with its record, wrapped by w. A keyed k's address key is
// kept: content keeps its addresses, and entry records their sealed
// hashes, under the new data key.
func Renew(ctx context.Context, w Wrapper, k *Key) (*Key, Record, error) {
	if !k.keyed {
		return NewRecord(ctx, w)
	}
	return keyedRecord(ctx, w, randomBytes(KeySize), k.addr)
}

// Keyed returns r's data key and a version 2 record of it, with an
// address key, both wrapped by w, for a store that moves from plain
// addresses to keyed ones; a version 2 r is returned as it is. The data
// key stays: content sealed under it still opens.
func Keyed(ctx context.Context, w Wrapper, r Record) (*Key, Record, error) {
	k, dk, _, err := unwrap(ctx, w, r)
	if err != nil || k.keyed {
		return k, r, err
	}
	ak, err := hkdf.Key(sha256.New, dk, nil, "depotfs address v1", sha256.Size)
	if err != nil {
		return nil, Record{}, err
	}
	return keyedRecord(ctx, w, dk, ak)
}

// keyedRecord returns the key and version 2 record of data key dk and
// address key ak, both wrapped by w.
func keyedRecord(ctx context.Context, w Wrapper, dk, ak []byte) (*Key, Record, error) {
	k, err := newKey(dk, ak)
	if err != nil {
		return nil, Record{}, err
	}
	wrapped, err := w.Wrap(ctx, dk)
	if err != nil {
		return nil, Record{}, fmt.Errorf("wrap data key under %s: %w", w.KeyID(), err)
	}
	addr, err := w.Wrap(ctx, ak)
	if err != nil {
		return nil, Record{}, fmt.Errorf("wrap address key under %s: %w", w.KeyID(), err)
	}
	return k, Record{V: recordKeyed, Cipher: Cipher, ID: k.id, KEKID: w.KeyID(), Wrapped: wrapped, Addr: addr}, nil
}

// Open unwraps r's data key with w. A w other than the key that wrapped
// it fails with an error wrapping ErrWrongKey that names both ids.
func Open(ctx context.Context, w Wrapper, r Record) (*Key, error) {
	k, _, _, err := unwrap(ctx, w, r)
	return k, err
}

// Rewrap returns r with its data key wrapped by next instead of cur: the
// rotation of the key-encryption key, one record whatever the depot
// holds. The content and its data key stay as they are.
func Rewrap(ctx context.Context, r Record, cur, next Wrapper) (Record, error) {
	_, dk, ak, err := unwrap(ctx, cur, r)
	if err != nil {
		return Record{}, err
	}
	wrapped, err := next.Wrap(ctx, dk)
	if err != nil {
		return Record{}, fmt.Errorf("wrap data key under %s: %w", next.KeyID(), err)
	}
	if r.V == recordKeyed {
		if r.Addr, err = next.Wrap(ctx, ak); err != nil {
			return Record{}, fmt.Errorf("wrap address key under %s: %w", next.KeyID(), err)
		}
	}
	r.KEKID, r.Wrapped = next.KeyID(), wrapped
	if _, err := Open(ctx, next, r); err != nil {
		return Record{}, fmt.Errorf("rewrapped data key does not open: %w", err)
	}
	return r, nil
}

// unwrap returns r's data key, as a Key and as bytes, and its address key
// (nil in a version 1 record), unwrapped by w.
func unwrap(ctx context.Context, w Wrapper, r Record) (*Key, []byte, []byte, error) {
	if w.KeyID() != r.KEKID {
		return nil, nil, nil, fmt.Errorf("%w: the depot's data key is wrapped by key %s, the key given is %s", ErrWrongKey, r.KEKID, w.KeyID())
	}
	dk, err := w.Unwrap(ctx, r.Wrapped)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("data key %s under key %s: %w", r.ID, r.KEKID, err)
	}
	var ak []byte
	if r.V == recordKeyed {
		if ak, err = w.Unwrap(ctx, r.Addr); err != nil {
			return nil, nil, nil, fmt.Errorf("address key of data key %s under key %s: %w", r.ID, r.KEKID, err)
		}
	}
	k, err := newKey(dk, ak)
	if err != nil {
		return nil, nil, nil, err
	}
	if k.id != r.ID {
		return nil, nil, nil, fmt.Errorf("data key under key %s: id %s, the record says %s: %w", r.KEKID, k.id, r.ID, ErrWrongKey)
	}
	return k, dk, ak, nil
}

// newKey derives the AEAD key from a data key. With an address key ak the
// key is keyed (Keyed); without, its address key is derived from the data
// key, as version 1 records had it.
func newKey(dk, ak []byte) (*Key, error) {
	if len(dk) != KeySize || (ak != nil && len(ak) != sha256.Size) {
		return nil, fmt.Errorf("data key: %d bytes, address key %d, want %d: %w", len(dk), len(ak), KeySize, ErrWrongKey)
	}
	ck, err := hkdf.Key(sha256.New, dk, nil, "depotfs chunk v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	keyed := ak != nil
	if !keyed {
		if ak, err = hkdf.Key(sha256.New, dk, nil, "depotfs address v1", sha256.Size); err != nil {
			return nil, err
		}
	}
	sk, err := hkdf.Key(sha256.New, ak, nil, "depotfs sum v1", 32)
	if err != nil {
		return nil, err
	}
	sums, err := aes.NewCipher(sk)
	if err != nil {
		return nil, err
	}
	rk, err := hkdf.Key(sha256.New, ak, nil, "depotfs record v1", chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	recs, err := chacha20poly1305.NewX(rk)
	if err != nil {
		return nil, err
	}
	a, err := chacha20poly1305.NewX(ck)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, dk)
	m.Write([]byte("depotfs data key id v1"))
	return &Key{id: "dk-" + hex.EncodeToString(m.Sum(nil)[:8]), aead: a, addr: ak, keyed: keyed, sums: sums, recs: recs}, nil
}

// Keyed reports whether the store names content by Address (the key came
// from a version 2 record): false for the version 1 records of stores
// sealed before keyed addresses, which name content by its plain SHA-256.
func (k *Key) Keyed() bool { return k.keyed }

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

// SealSum returns sum enciphered, for a record that must keep a content's
// plain SHA-256 without showing it: AES-256 in CBC mode with a zero IV over
// the two 16-byte halves, under a key derived from the address key (so a
// new data key leaves it unchanged). It is deterministic, so equal hashes
// encipher equally, which is no more than equal addresses show already;
// since a SHA-256 is uniformly random, no two unequal hashes share a
// first block in practice, and that is all CBC with a fixed IV reveals.
// Without the key the result neither confirms a guessed file nor matches
// another depot's. OpenSum inverts it.
func (k *Key) SealSum(sum [sha256.Size]byte) [sha256.Size]byte {
	var out [sha256.Size]byte
	k.sums.Encrypt(out[:16], sum[:16])
	var mid [16]byte
	subtle.XORBytes(mid[:], sum[16:], out[:16])
	k.sums.Encrypt(out[16:], mid[:])
	return out
}

// OpenSum is the inverse of SealSum.
func (k *Key) OpenSum(sealed [sha256.Size]byte) [sha256.Size]byte {
	var out [sha256.Size]byte
	k.sums.Decrypt(out[:16], sealed[:16])
	k.sums.Decrypt(out[16:], sealed[16:])
	subtle.XORBytes(out[16:], out[16:], sealed[:16])
	return out
}
