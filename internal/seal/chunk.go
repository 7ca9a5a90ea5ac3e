package seal

import (
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
func (k *Key) Seal(dst, plain, ad []byte) []byte {
	head := len(dst)
	dst = append(dst, version)
	dst = append(dst, randomBytes(nonceSize)...)
	nonce := dst[head+1 : head+1+nonceSize]
	return k.aead.Seal(dst, nonce, plain, ad)
}

// Open appends the plaintext of sealed to dst and returns it; sealed
// bytes that were changed, cut, or sealed with other associated data or
// under another key fail with an error wrapping ErrTampered. sealed is
// untrusted: any bytes give plaintext or that error, never a panic.
func (k *Key) Open(dst, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < Overhead {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a sealed chunk", ErrTampered, len(sealed))
	}
	if sealed[0] != version {
		return nil, fmt.Errorf("%w: format %d, this build reads %d", ErrTampered, sealed[0], version)
	}
	out, err := k.aead.Open(dst, sealed[1:1+nonceSize], sealed[1+nonceSize:], ad)
	if err != nil {
		return nil, fmt.Errorf("%w (key %s)", ErrTampered, k.id)
	}
	return out, nil
}
