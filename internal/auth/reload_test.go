package auth_test

import (
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
)

// TestCRLReloadNow: Reload reads a rewrite the stat cannot see (same size,
// mtime and inode) at once, without waiting for Recheck.
func TestCRLReloadNow(t *testing.T) {
	ca := newCA(t, "depotfs test CA")
	clk := newClock()
	path := filepath.Join(t.TempDir(), "crl.pem")
	writeCRL(t, path, ca.cert, ca.key, 1, base, 7*24*time.Hour, big.NewInt(7))
	crl, err := auth.OpenCRL(path, ca.cert, &auth.FileOptions{Now: clk.Now, Recheck: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	other := filepath.Join(t.TempDir(), "other.pem")
	var data []byte
	for range 20 { // ECDSA signatures vary in length; retry until equal
		writeCRL(t, other, ca.cert, ca.key, 2, base, 7*24*time.Hour, big.NewInt(8))
		if data, _ = os.ReadFile(other); int64(len(data)) == fi.Size() {
			break
		}
	}
	if int64(len(data)) != fi.Size() {
		t.Fatal("could not make a CRL of the same size")
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := crl.Check(big.NewInt(8)); err != nil {
		t.Fatalf("before Reload: %v (the cheap stat cannot have seen the change)", err)
	}
	if err := crl.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if err := crl.Check(big.NewInt(8)); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("after Reload: %v, want ErrRevoked", err)
	}
	if err := os.WriteFile(path, []byte("not a CRL"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := crl.Reload(); !errors.Is(err, auth.ErrCRLInvalid) {
		t.Errorf("Reload of a broken CRL: %v, want ErrCRLInvalid", err)
	}
}

// TestTokensReloadNow: Reload reads a revocation the stat cannot see
// (same size, mtime and inode).
func TestTokensReloadNow(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "tokens.json")
	tok, rec, err := auth.IssueToken(path, "ci", nil, time.Time{}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	valid, _ := os.ReadFile(path)
	if err := auth.RevokeToken(path, rec.ID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	revoked, _ := os.ReadFile(path)
	// The valid file padded with spaces to the revoked one's size, in
	// place, so that the revocation later changes neither size nor inode.
	inPlace := func(data []byte, mtime time.Time) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	mtime := time.Now().Add(-time.Hour).Truncate(time.Second)
	pad := make([]byte, len(revoked)-len(valid))
	for i := range pad {
		pad[i] = ' '
	}
	inPlace(append(valid, pad...), mtime)
	tokens, err := auth.OpenTokens(path, &auth.FileOptions{Now: clk.Now, Recheck: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	inPlace(revoked, mtime)
	if _, err := tokens.Authenticate(tok); err != nil {
		t.Fatalf("before Reload: %v (the cheap stat cannot have seen the change)", err)
	}
	if err := tokens.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, err := tokens.Authenticate(tok); !errors.Is(err, auth.ErrTokenRevoked) {
		t.Fatalf("after Reload: %v, want ErrTokenRevoked", err)
	}
}
