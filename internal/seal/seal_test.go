package seal_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
)

// newKEK returns a fresh key-encryption key.
func newKEK(t testing.TB) *seal.FileKey {
	t.Helper()
	k, err := seal.ParseKey(seal.NewKeyText())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// newKey returns a fresh data key and its record, wrapped by kek.
func newKey(t testing.TB, kek seal.Wrapper) (*seal.Key, seal.Record) {
	t.Helper()
	k, r, err := seal.NewRecord(context.Background(), kek)
	if err != nil {
		t.Fatal(err)
	}
	return k, r
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	k, _ := newKey(t, newKEK(t))
	plain := []byte("the quarterly report, in the clear")
	ad := []byte("blob 1 chunk 0")
	sealed := k.Seal(nil, plain, ad)
	if len(sealed) != len(plain)+seal.Overhead {
		t.Fatalf("sealed %d bytes, want %d", len(sealed), len(plain)+seal.Overhead)
	}
	if bytes.Contains(sealed, []byte("quarterly")) {
		t.Fatal("sealed chunk holds its plaintext")
	}
	if again := k.Seal(nil, plain, ad); bytes.Equal(again, sealed) {
		t.Fatal("two seals of the same chunk are equal: the nonce repeated")
	}
	got, err := k.Open(nil, sealed, ad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v; want the plaintext", got, err)
	}
	for name, c := range map[string]struct{ sealed, ad []byte }{
		"flipped byte":     {flip(sealed, len(sealed)/2), ad},
		"flipped tag":      {flip(sealed, len(sealed)-1), ad},
		"flipped nonce":    {flip(sealed, 3), ad},
		"other version":    {flip(sealed, 0), ad},
		"other position":   {sealed, []byte("blob 1 chunk 1")},
		"other content":    {sealed, []byte("blob 2 chunk 0")},
		"cut":              {sealed[:len(sealed)-1], ad},
		"shorter than tag": {sealed[:seal.Overhead-1], ad},
		"empty":            {nil, ad},
	} {
		if got, err := k.Open(nil, c.sealed, c.ad); !errors.Is(err, seal.ErrTampered) || got != nil {
			t.Errorf("%s: Open = %q, %v; want ErrTampered", name, got, err)
		}
	}
	other, _ := newKey(t, newKEK(t))
	if _, err := other.Open(nil, sealed, ad); !errors.Is(err, seal.ErrTampered) {
		t.Errorf("another data key opened the chunk: %v", err)
	}
}

// flip returns a copy of b with byte i inverted.
func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0xff
	return c
}

func TestRecordOpenRewrap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek, kek2 := newKEK(t), newKEK(t)
	k, r := newKey(t, kek)
	parsed, err := seal.ParseRecord(r.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(r.Marshal(), []byte(k.ID()[3:])) && parsed.ID != k.ID() {
		t.Fatal("record lost the data key id")
	}
	k1, err := seal.Open(ctx, kek, parsed)
	if err != nil || k1.ID() != k.ID() {
		t.Fatalf("Open = %v, %v; want data key %s", k1, err, k.ID())
	}
	sealed := k.Seal(nil, []byte("x"), nil)
	if _, err := k1.Open(nil, sealed, nil); err != nil {
		t.Fatalf("the reopened key does not open what the first sealed: %v", err)
	}

	_, err = seal.Open(ctx, kek2, r)
	if !errors.Is(err, seal.ErrWrongKey) || !strings.Contains(err.Error(), kek.KeyID()) || !strings.Contains(err.Error(), kek2.KeyID()) {
		t.Fatalf("Open with another key = %v; want ErrWrongKey naming %s and %s", err, kek.KeyID(), kek2.KeyID())
	}

	r2, err := seal.Rewrap(ctx, r, kek, kek2)
	if err != nil {
		t.Fatal(err)
	}
	if r2.KEKID != kek2.KeyID() || r2.ID != r.ID || bytes.Equal(r2.Wrapped, r.Wrapped) {
		t.Fatalf("rewrapped record %+v: want kek %s, data key %s, new wrapping", r2, kek2.KeyID(), r.ID)
	}
	k2, err := seal.Open(ctx, kek2, r2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k2.Open(nil, sealed, nil); err != nil {
		t.Fatalf("rotation changed the data key: %v", err)
	}
	if _, err := seal.Open(ctx, kek, r2); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("the old key still opens the rewrapped record: %v", err)
	}
	if _, err := seal.Rewrap(ctx, r, kek2, kek); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("Rewrap with a key that is not the current one = %v; want ErrWrongKey", err)
	}

	// A wrapping tampered with, under the right key id, is refused too.
	bad := r
	bad.Wrapped = flip(r.Wrapped, len(r.Wrapped)-1)
	if _, err := seal.Open(ctx, kek, bad); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("tampered wrapping = %v; want ErrWrongKey", err)
	}
	for _, b := range []string{"", "{}", `{"v":2,"cipher":"xchacha20-poly1305","kek_id":"x","wrapped":"AA=="}`, "not json"} {
		if _, err := seal.ParseRecord([]byte(b)); err == nil {
			t.Errorf("ParseRecord(%q) accepted it", b)
		}
	}
}

func TestAddress(t *testing.T) {
	t.Parallel()
	k, _ := newKey(t, newKEK(t))
	other, _ := newKey(t, newKEK(t))
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	if a2 := sha256.Sum256([]byte("a")); k.Address(a) != k.Address(a2) {
		t.Fatal("the address of equal content differs: no dedup")
	}
	if k.Address(a) == k.Address(b) || k.Address(a) == a || k.Address(a) == other.Address(a) {
		t.Fatal("addresses collide across contents or keys, or equal the plain hash")
	}
}

// TestKeyedRecord: a version 2 record's key is keyed, survives parsing,
// rewrapping and a new data key (Renew) with the same addresses and
// enciphered hashes, and a version 1 record's is not keyed and renews as
// version 1.
func TestKeyedRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek, kek2 := newKEK(t), newKEK(t)
	k, r, err := seal.NewKeyedRecord(ctx, kek)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("content"))
	if !k.Keyed() || r.V != 2 || len(r.Addr) == 0 {
		t.Fatalf("NewKeyedRecord: keyed %v, record %+v", k.Keyed(), r)
	}
	if sealed := k.SealSum(sum); sealed == sum || k.OpenSum(sealed) != sum || k.SealSum(sum) != sealed {
		t.Fatal("SealSum does not hide the hash, is not deterministic, or OpenSum does not invert it")
	}
	parsed, err := seal.ParseRecord(r.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := seal.Rewrap(ctx, parsed, kek, kek2)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := seal.Open(ctx, kek2, r2)
	if err != nil || !k2.Keyed() || k2.Address(sum) != k.Address(sum) || k2.SealSum(sum) != k.SealSum(sum) {
		t.Fatalf("rewrapped key: %v, keyed %v, same address %v", err, k2 != nil && k2.Keyed(), k2 != nil && k2.Address(sum) == k.Address(sum))
	}
	rec := k.SealRecord(nil, []byte("record"), []byte("ad"))
	k3, r3, err := seal.Renew(ctx, kek2, k2)
	if err != nil {
		t.Fatal(err)
	}
	if k3.ID() == k.ID() || !k3.Keyed() || k3.Address(sum) != k.Address(sum) || k3.OpenSum(k.SealSum(sum)) != sum {
		t.Fatal("Renew did not make a new data key with the same address key")
	}
	if p, err := k3.OpenRecord(nil, rec, []byte("ad")); err != nil || string(p) != "record" {
		t.Fatalf("a record sealed before Renew: %q, %v", p, err)
	}
	if _, err := k3.Open(nil, k.Seal(nil, []byte("chunk"), nil), nil); !errors.Is(err, seal.ErrTampered) {
		t.Fatalf("the renewed data key opens the old one's chunk: %v", err)
	}
	if k4, err := seal.Open(ctx, kek2, r3); err != nil || k4.ID() != k3.ID() || k4.Address(sum) != k.Address(sum) {
		t.Fatalf("the renewed record: %v", err)
	}
	bad := r
	bad.Addr = nil
	if _, err := seal.ParseRecord(bad.Marshal()); err == nil {
		t.Fatal("a version 2 record without an address key parsed")
	}

	v1, _ := newKey(t, kek)
	if v1.Keyed() {
		t.Fatal("a version 1 key is keyed")
	}
	if k5, r5, err := seal.Renew(ctx, kek, v1); err != nil || k5.Keyed() || r5.V != 1 {
		t.Fatalf("Renew of a version 1 key: %v, record version %d", err, r5.V)
	}

	// Keyed gives a version 1 record's data key an address key, keeping
	// the data key; a version 2 record stays as it is.
	v1k, v1r := newKey(t, kek)
	chunk := v1k.Seal(nil, []byte("chunk"), nil)
	k6, r6, err := seal.Keyed(ctx, kek, v1r)
	if err != nil || !k6.Keyed() || r6.V != 2 || k6.ID() != v1k.ID() {
		t.Fatalf("Keyed of a version 1 record: %v, %+v", err, r6)
	}
	if _, err := k6.Open(nil, chunk, nil); err != nil {
		t.Fatalf("the keyed data key does not open what it sealed before: %v", err)
	}
	if k7, err := seal.Open(ctx, kek, r6); err != nil || k7.Address(sum) != k6.Address(sum) {
		t.Fatalf("the keyed record: %v", err)
	}
	if _, r8, err := seal.Keyed(ctx, kek, r); err != nil || !bytes.Equal(r8.Addr, r.Addr) {
		t.Fatalf("Keyed of a version 2 record changed it: %v", err)
	}
	if _, _, err := seal.Keyed(ctx, kek2, v1r); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("Keyed with another key = %v; want ErrWrongKey", err)
	}
}

func TestParseKeyAndFile(t *testing.T) {
	t.Parallel()
	text := seal.NewKeyText()
	k1, err := seal.ParseKey(text)
	if err != nil {
		t.Fatal(err)
	}
	k2, err := seal.ParseKey([]byte("  " + strings.ToUpper(strings.TrimSpace(string(text))) + "\n\n"))
	if err != nil || k2.KeyID() != k1.KeyID() {
		t.Fatalf("the same key in capitals and spaces = %v, %v; want id %s", k2, err, k1.KeyID())
	}
	if k3, _ := seal.ParseKey(seal.NewKeyText()); k3.KeyID() == k1.KeyID() {
		t.Fatal("two new keys have one id")
	}
	for _, bad := range []string{"", "abc", strings.Repeat("g", 64), strings.Repeat("0", 66)} {
		if _, err := seal.ParseKey([]byte(bad)); err == nil {
			t.Errorf("ParseKey(%q) accepted it", bad)
		}
	}

	dir := t.TempDir()
	path := filepath.Join(dir, "depot.key")
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := seal.LoadKeyFile(path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key file others can read = %v; want a refusal saying chmod 600", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	k4, err := seal.LoadKeyFile(path)
	if err != nil || k4.KeyID() != k1.KeyID() {
		t.Fatalf("LoadKeyFile = %v, %v; want id %s", k4, err, k1.KeyID())
	}
	if _, err := seal.LoadKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing key file = %v; want ErrNotExist", err)
	}
}

// fixedWrapper wraps a data key as itself: a test key-encryption key
// that lets a fuzz test's worker processes share one data key.
type fixedWrapper struct{}

func (fixedWrapper) KeyID() string { return "test" }
func (fixedWrapper) Wrap(_ context.Context, dk []byte) ([]byte, error) {
	return bytes.Clone(dk), nil
}
func (fixedWrapper) Unwrap(_ context.Context, w []byte) ([]byte, error) {
	return bytes.Clone(w), nil
}

// fixedKey is a data key every fuzz worker derives the same way.
func fixedKey(t testing.TB) *seal.Key {
	t.Helper()
	dk := bytes.Repeat([]byte{7}, seal.KeySize)
	m := hmac.New(sha256.New, dk)
	m.Write([]byte("depotfs data key id v1"))
	r := seal.Record{V: 1, Cipher: seal.Cipher, ID: "dk-" + hex.EncodeToString(m.Sum(nil)[:8]), KEKID: "test", Wrapped: dk}
	k, err := seal.Open(context.Background(), fixedWrapper{}, r)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// FuzzOpen feeds untrusted bytes, as a copied or damaged store holds them,
// to Open: each gives the plaintext of a chunk really sealed with that
// associated data, or ErrTampered; never a panic or other bytes.
func FuzzOpen(f *testing.F) {
	k := fixedKey(f)
	good := k.Seal(nil, []byte("hello"), []byte("ad"))
	f.Add(good, []byte("ad"))
	f.Add(good[:seal.Overhead], []byte("ad"))
	f.Add([]byte{1}, []byte(nil))
	f.Add([]byte{}, []byte("ad"))
	f.Fuzz(func(t *testing.T, sealed, ad []byte) {
		got, err := k.Open(nil, sealed, ad)
		if err != nil {
			if !errors.Is(err, seal.ErrTampered) || got != nil {
				t.Fatalf("Open = %q, %v; want nil, ErrTampered", got, err)
			}
			return
		}
		// Only a sealing of "hello" with "ad" opens: the seeds', or one
		// the fuzzer cannot forge.
		if !bytes.Equal(ad, []byte("ad")) || string(got) != "hello" {
			t.Fatalf("Open accepted bytes nobody sealed: %x (ad %q) → %q", sealed, ad, got)
		}
	})
}

// FuzzParseRecord feeds untrusted metadata to ParseRecord and Open: an
// error or the data key the record names, never a panic.
func FuzzParseRecord(f *testing.F) {
	kek, err := seal.ParseKey([]byte(strings.Repeat("cd", 32)))
	if err != nil {
		f.Fatal(err)
	}
	_, r, err := seal.NewRecord(context.Background(), kek)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(r.Marshal())
	f.Add([]byte(`{"v":1,"cipher":"xchacha20-poly1305","kek_id":"` + kek.KeyID() + `","wrapped":"AA=="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := seal.ParseRecord(b)
		if err != nil {
			return
		}
		k, err := seal.Open(context.Background(), kek, rec)
		if err == nil && (k.ID() != rec.ID || rec.KEKID != kek.KeyID()) {
			t.Fatalf("record %+v opened as data key %s", rec, k.ID())
		}
	})
}
