package auth_test

import (
	"crypto/x509"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
)

func TestOpenCRLRefuses(t *testing.T) {
	ca := newCA(t, "depotfs test CA")
	impostor := newCA(t, "depotfs test CA") // same name, another key
	stranger := newCA(t, "someone else")
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
		want  error
	}{
		{"missing file", func(*testing.T, string) {}, auth.ErrCRLInvalid},
		{"not a CRL", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("hello"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, auth.ErrCRLInvalid},
		{"signed by another key", func(t *testing.T, path string) {
			writeCRL(t, path, impostor.cert, impostor.key, 1, base, time.Hour)
		}, auth.ErrCRLInvalid},
		{"issued by another CA", func(t *testing.T, path string) {
			writeCRL(t, path, stranger.cert, stranger.key, 1, base, time.Hour)
		}, auth.ErrCRLInvalid},
		{"stale", func(t *testing.T, path string) {
			writeCRL(t, path, ca.cert, ca.key, 1, base.Add(-2*time.Hour), time.Hour)
		}, auth.ErrCRLStale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "crl.pem")
			tt.write(t, path)
			_, err := auth.OpenCRL(path, ca.cert, &auth.FileOptions{Now: newClock().Now, Logger: quiet})
			if !errors.Is(err, tt.want) {
				t.Errorf("OpenCRL = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestCRLReload follows one CRL file through changes: every Check sees the
// file as it is now, and anything unusable refuses every certificate until
// a good CRL is back.
func TestCRLReload(t *testing.T) {
	ca := newCA(t, "depotfs test CA")
	impostor := newCA(t, "depotfs test CA")
	clk := newClock()
	path := filepath.Join(t.TempDir(), "crl.pem")
	writeCRL(t, path, ca.cert, ca.key, 1, base, 7*24*time.Hour)
	crl, err := auth.OpenCRL(path, ca.cert, &auth.FileOptions{Now: clk.Now, Recheck: time.Minute, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	s5, s6 := big.NewInt(5), big.NewInt(6)
	steps := []struct {
		name   string
		change func(t *testing.T)
		serial *big.Int
		want   error
	}{
		{"initially valid", nil, s5, nil},
		{"revoked by a new CRL", func(t *testing.T) { writeCRL(t, path, ca.cert, ca.key, 2, base, 7*24*time.Hour, s5) }, s5, auth.ErrRevoked},
		{"others still valid", nil, s6, nil},
		{"replaced by a CRL signed by another key", func(t *testing.T) {
			writeCRL(t, path, impostor.cert, impostor.key, 3, base, 7*24*time.Hour)
		}, s6, auth.ErrCRLInvalid},
		{"a good CRL again", func(t *testing.T) { writeCRL(t, path, ca.cert, ca.key, 3, base, 7*24*time.Hour, s5) }, s6, nil},
		{"rolled back to an older CRL", func(t *testing.T) { writeCRL(t, path, ca.cert, ca.key, 1, base, 7*24*time.Hour) }, s5, auth.ErrCRLInvalid},
		{"removed", func(t *testing.T) { os.Remove(path) }, s6, auth.ErrCRLInvalid},
		{"restored", func(t *testing.T) { writeCRL(t, path, ca.cert, ca.key, 4, base, 7*24*time.Hour, s5) }, s5, auth.ErrRevoked},
		{"stale", func(*testing.T) { clk.Add(7 * 24 * time.Hour) }, s6, auth.ErrCRLStale},
		{"refreshed", func(t *testing.T) { writeCRL(t, path, ca.cert, ca.key, 5, clk.Now(), 7*24*time.Hour) }, s6, nil},
		{"unrevoked", nil, s5, nil},
	}
	for _, st := range steps {
		if st.change != nil {
			st.change(t)
		}
		if err := crl.Check(st.serial); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("%s: Check(%v) = %v, want %v", st.name, st.serial, err, st.want)
		}
	}
	if got := crl.NextUpdate(); !got.Equal(clk.Now().Add(7 * 24 * time.Hour)) {
		t.Errorf("NextUpdate = %v", got)
	}
}

// TestCRLRewriteSameStat shows that a rewrite the stat cannot see (same
// size, same mtime, same inode) is found once Recheck has passed.
func TestCRLRewriteSameStat(t *testing.T) {
	ca := newCA(t, "depotfs test CA")
	clk := newClock()
	path := filepath.Join(t.TempDir(), "crl.pem")
	writeCRL(t, path, ca.cert, ca.key, 1, base, 7*24*time.Hour, big.NewInt(7))
	crl, err := auth.OpenCRL(path, ca.cert, &auth.FileOptions{Now: clk.Now, Recheck: time.Minute, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	// A same-length CRL revoking serial 8 instead of 7, written in place
	// with the old mtime.
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
		t.Fatalf("before Recheck: %v (the cheap stat cannot have seen the change)", err)
	}
	clk.Add(time.Minute)
	if err := crl.Check(big.NewInt(8)); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("after Recheck: %v, want ErrRevoked", err)
	}
}

func TestLoadCACert(t *testing.T) {
	ca := newCA(t, "one")
	leaf, _ := ca.issue(t, agentTemplate(t, "leaf"))
	dir := t.TempDir()
	write := func(name string, certs ...*x509.Certificate) string {
		var data []byte
		for _, c := range certs {
			data = append(data, pemCert(c)...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if c, err := auth.LoadCACert(write("ok.pem", ca.cert)); err != nil || !c.Equal(ca.cert) {
		t.Errorf("one CA: %v", err)
	}
	for name, certs := range map[string][]*x509.Certificate{
		"none.pem": nil, "two.pem": {ca.cert, newCA(t, "two").cert}, "leaf.pem": {leaf},
	} {
		if _, err := auth.LoadCACert(write(name, certs...)); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
