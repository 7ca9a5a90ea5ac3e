package seal

import (
	"crypto/cipher"
	"fmt"

	"golang.org/x/crypto/chacha20poly1305"
)

// version is the first byte of a sealed chunk: its format.
const version = 1

// nonceSize is XChaCha20-Poly1305's nonce size, 24 bytes.
const nonceSize = chacha20poly1305.NonceSizeX

// Overhead is how many bytes sealing adds to a chunk: the version byte,
// the nonce and the tag.
const Overhead = 1 + nonceSize + chacha20poly1305.Overhead

// Seal appends the sealed form of plain to dst and returns it: the version
// byte, a fresh random nonce, the ciphertext and tag. ad, which is not
// stored, must be given again to open it: the chunk's identity and
// position.
func (k *Key) Seal(dst, plain, ad []byte) []byte { return sealWith(k.aead, dst, plain, ad) }

// SealRecord is Seal under a key derived from the address key instead of
// the data key, for what a store keeps to hide plain hashes (records that
// name content): a new data key (Renew) leaves it unchanged, as it leaves
// the addresses. OpenRecord opens it.
func (k *Key) SealRecord(dst, plain, ad []byte) []byte { return sealWith(k.recs, dst, plain, ad) }

// OpenRecord is the inverse of SealRecord, and fails as Open does.
func (k *Key) OpenRecord(dst, sealed, ad []byte) ([]byte, error) {
	return k.openWith(k.recs, dst, sealed, ad)
}

// sealWith is Seal under a.
func sealWith(a cipher.AEAD, dst, plain, ad []byte) []byte {
	head := len(dst)
	dst = append(dst, version)
	dst = append(dst, randomBytes(nonceSize)...)
	nonce := dst[head+1 : head+1+nonceSize]
	return a.Seal(dst, nonce, plain, ad)
}

// Open appends the plaintext of sealed to dst and returns it; sealed
// bytes that were changed, cut, or sealed with other associated data or
// under another key fail with an error wrapping ErrTampered. sealed is
// untrusted: any bytes give plaintext or that error, never a panic.
func (k *Key) Open(dst, sealed, ad []byte) ([]byte, error) {
	return k.openWith(k.aead, dst, sealed, ad)
}

// openWith is Open under a.
func (k *Key) openWith(a cipher.AEAD, dst, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a sealed chunk", ErrTampered, len(sealed))
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("%w: format %d, this build reads %d", ErrTampered, sealed[0], version)
	}
	out, err := a.Open(dst, sealed[1:1+nonceSize], sealed[1+nonceSize:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w (key %s)", ErrTampered, k.id)
	}
	return out, nil
}
