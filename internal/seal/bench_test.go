package seal_test

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"golang.org/x/crypto/chacha20poly1305"
)

// The chunk ciphers next to SHA-256, which every stored byte already goes
// through, on 1 MiB (the bolt store's chunk size): `go test -bench .
// ./internal/seal`. The choice in DESIGN.md ("Sealing") rests on these.

var chunk = make([]byte, 1<<20)

func BenchmarkSHA256(b *testing.B) {
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		sha256.Sum256(chunk)
	}
}

func BenchmarkAES256GCM(b *testing.B) {
	blk, err := aes.NewCipher(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	a, err := cipher.NewGCM(blk)
	if err != nil {
		b.Fatal(err)
	}
	benchAEAD(b, a)
}

func BenchmarkXChaCha20Poly1305(b *testing.B) {
	a, err := chacha20poly1305.NewX(make([]byte, 32))
	if err != nil {
		b.Fatal(err)
	}
	benchAEAD(b, a)
}

func BenchmarkSealOpen(b *testing.B) {
	k, _ := newKey(b, newKEK(b))
	ad := []byte("chunk")
	sealed := k.Seal(nil, chunk, ad)
	b.Run("seal", func(b *testing.B) {
		out := make([]byte, 0, len(sealed))
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			k.Seal(out[:0], chunk, ad)
		}
	})
	b.Run("open", func(b *testing.B) {
		out := make([]byte, 0, len(chunk))
		b.SetBytes(int64(len(chunk)))
		for b.Loop() {
			if _, err := k.Open(out[:0], sealed, ad); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func benchAEAD(b *testing.B, a cipher.AEAD) {
	nonce := make([]byte, a.NonceSize())
	out := make([]byte, 0, len(chunk)+a.Overhead())
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		a.Seal(out[:0], nonce, chunk, nil)
	}
}

// BenchmarkKeyedAddress is what a keyed store adds per hash it maps: the
// address of a plain SHA-256 (each Open, write or lookup by hash) and the
// opening of an enciphered hash (each entry record read, listings too).
func BenchmarkKeyedAddress(b *testing.B) {
	k, _, err := seal.NewKeyedRecord(b.Context(), newKEK(b))
	if err != nil {
		b.Fatal(err)
	}
	sum := sha256.Sum256([]byte("content"))
	b.Run("address", func(b *testing.B) {
		for b.Loop() {
			sum = k.Address(sum)
		}
	})
	b.Run("opensum", func(b *testing.B) {
		for b.Loop() {
			sum = k.OpenSum(sum)
		}
	})
}
