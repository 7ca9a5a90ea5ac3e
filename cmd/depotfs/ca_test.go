package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/auth"
)

// runOK runs a depotfs command that must succeed and returns its stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("depotfs %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return stdout.String()
}

// runFail runs a depotfs command that must fail with code and returns its
// stderr.
func runFail(t *testing.T, code int, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if got := run(context.Background(), args, &stdout, &stderr); got != code {
		t.Fatalf("depotfs %s: exit %d, want %d\n%s", strings.Join(args, " "), got, code, stderr.String())
	}
	return stderr.String()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCACommands(t *testing.T) {
	dir := t.TempDir()
	caDir, out := filepath.Join(dir, "ca"), filepath.Join(dir, "out")
	runOK(t, "ca", "init", "--dir", caDir)
	if msg := runFail(t, 1, "ca", "init", "--dir", caDir); !strings.Contains(msg, "already exists") {
		t.Errorf("second init: %q", msg)
	}
	stdout := runOK(t, "ca", "issue", "--dir", caDir, "--name", "builder", "--domain", "example.org",
		"--grant", "guide:/projects/a:rw", "--grant", "*:/shared:r", "--out", out)
	if !strings.Contains(stdout, "depotfs://example.org/agent/builder") {
		t.Errorf("issue output %q", stdout)
	}
	cert := readCert(t, filepath.Join(out, "builder.crt"))
	gs, err := auth.CertGrants(cert, false)
	if err != nil || len(gs) != 2 || gs[0].String() != "guide:/projects/a:rw" || gs[1].String() != "*:/shared:r" {
		t.Errorf("issued grants %v, %v", gs, err)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore).Hours(); d < 7*24 || d > 7*24+1 {
		t.Errorf("default validity %v hours, want 7 days", d)
	}
	if fi, err := os.Stat(filepath.Join(out, "builder.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("agent key mode %v, %v", fi.Mode(), err)
	}
	if msg := runFail(t, 1, "ca", "issue", "--dir", caDir, "--name", "builder", "--out", out); !strings.Contains(msg, "exists") {
		t.Errorf("issuing over existing files: %q", msg)
	}
	runFail(t, 2, "ca", "issue", "--dir", caDir, "--grant", "guide:/a:rw")
	runFail(t, 2, "ca", "issue", "--dir", caDir, "--name", "x", "--grant", "guide:/a:x")
	runFail(t, 2, "ca", "issue", "--dir", caDir, "--name", "x", "--days", "0")

	runOK(t, "ca", "server-cert", "--dir", caDir, "--host", "127.0.0.1", "--host", "depot.example.org", "--out", out)
	server := readCert(t, filepath.Join(out, "server.crt"))
	if len(server.IPAddresses) != 1 || len(server.DNSNames) != 1 {
		t.Errorf("server certificate names %v %v", server.IPAddresses, server.DNSNames)
	}

	// Revoke by file, positional argument before the flag.
	if stdout := runOK(t, "ca", "revoke", filepath.Join(out, "builder.crt"), "--dir", caDir); !strings.Contains(stdout, "revoked serial "+cert.SerialNumber.Text(16)) {
		t.Errorf("revoke output %q", stdout)
	}
	if stdout := runOK(t, "ca", "revoke", "--dir", caDir, cert.SerialNumber.Text(16)); !strings.Contains(stdout, "already revoked") {
		t.Errorf("second revoke output %q", stdout)
	}
	runFail(t, 2, "ca", "revoke", "--dir", caDir)
	runOK(t, "ca", "crl", "--dir", caDir, "--days", "3")
	caCert, err := auth.LoadCACert(filepath.Join(caDir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	crl, err := auth.OpenCRL(filepath.Join(caDir, "crl.pem"), caCert, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := crl.Check(cert.SerialNumber); err == nil {
		t.Error("the revoked certificate passes the CRL")
	}
	runFail(t, 2, "ca")
	runFail(t, 2, "ca", "frobnicate")
}

func TestTokenCommands(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens.json")
	tok := strings.TrimSpace(runOK(t, "token", "issue", "--tokens", file, "--name", "ci", "--grant", "guide:/ci:rw", "--days", "0"))
	if !strings.HasPrefix(tok, "dfs1_") {
		t.Fatalf("token %q", tok)
	}
	list := runOK(t, "token", "list", "--tokens", file)
	id := tok[len("dfs1_") : len("dfs1_")+16]
	if !strings.Contains(list, id) || !strings.Contains(list, "valid") || strings.Contains(list, tok) {
		t.Errorf("list %q", list)
	}
	runOK(t, "token", "revoke", id, "--tokens", file)
	if list := runOK(t, "token", "list", "--tokens", file, "--json"); !strings.Contains(list, `"revoked"`) {
		t.Errorf("list after revoke %q", list)
	}
	runFail(t, 1, "token", "revoke", "--tokens", file, "0000000000000000")
	runFail(t, 2, "token", "issue", "--tokens", file)
	runFail(t, 2, "token", "revoke", "--tokens", file)
}

func TestParseFlagsArgs(t *testing.T) {
	tests := []struct {
		args    []string
		wantPos string
		wantDir string
	}{
		{[]string{"X"}, "X", "def"},
		{[]string{"X", "--dir", "d"}, "X", "d"},
		{[]string{"--dir", "d", "X"}, "X", "d"},
		{[]string{"--dir=d", "X"}, "X", "d"},
		{[]string{"-v", "X"}, "X", "def"},
		{[]string{"--", "-X"}, "-X", "def"},
	}
	for _, tt := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		dir := fs.String("dir", "def", "")
		fs.Bool("v", false, "")
		pos, err := parseFlagsArgs(fs, tt.args, &bytes.Buffer{}, 1, "one")
		if err != nil || pos[0] != tt.wantPos || *dir != tt.wantDir {
			t.Errorf("%q: %v %q dir %q", tt.args, err, pos, *dir)
		}
	}
}
