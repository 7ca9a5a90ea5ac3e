package integration_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// exportContents returns an export's manifest and its files' bytes by
// member name.
func exportContents(t *testing.T, file string) (string, map[string][]byte) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var manifest string
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Name == "manifest.jsonl":
			manifest = string(b)
		case strings.HasPrefix(h.Name, "files/"):
			files[h.Name] = b
		}
	}
	return manifest, files
}

// seedExport writes to file an offline export of a bolt depot holding
// every kind of entry: files with modes, mtimes, a pin and an expiry, an
// empty file, placeholders and an explicit directory. It returns the bytes
// of its largest file, /proj/big.bin.
func seedExport(t *testing.T, file string) []byte {
	t.Helper()
	a := startDaemon(t, daemonConfig{transport: overHTTP})
	big := pseudoRandom(3<<20+17, 9)
	pushBytes(a, "/proj/big.bin", big, map[string]any{"mode": "0600", "mtime": "2024-05-01T12:00:00.123456789Z", "pin": true})
	pushBytes(a, "/proj/run.sh", []byte("#!/bin/sh\necho hi\n"), map[string]any{"mode": "0755", "ttl_seconds": 86400})
	pushBytes(a, "/proj/empty.txt", nil, nil)
	pushBytes(a, "/other/deep/x.txt", []byte("x"), nil)
	a.mustCall("guide_list_directory", map[string]any{"path": "/listed", "entries": []any{
		map[string]any{"name": "later.bin", "type": "file", "size": 1234, "mtime": "2023-01-02T03:04:05Z"},
		map[string]any{"name": "sub", "type": "directory"},
	}})
	a.stop()
	runProgram(t, depotfsBin, "export", "--db", a.db, "--to", file)
	return big
}

// TestExportImportRoundTrip: bolt -> export -> import into a 3-node NATS
// depot -> export -> import into a new bolt depot -> export: the three
// exports are identical (paths, bytes, modes, mtimes, pins, expiries,
// placeholders with their declared size and hash, explicit directories),
// and the final depot serves the files byte-identical. Importing again
// skips everything.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1, e2, e3 := filepath.Join(dir, "e1.tar"), filepath.Join(dir, "e2.tar"), filepath.Join(dir, "e3.tar")
	big := seedExport(t, e1)

	cluster := natstest.Start(t, 3)
	natsArgs := []string{"--store", cluster.URL(), "--nats-prefix", fmt.Sprintf("exp%d", depotSeq.Add(1))}
	runProgram(t, depotfsBin, append([]string{"import", e1}, natsArgs...)...)
	if out := runProgram(t, depotfsBin, append([]string{"import", e1, "--json"}, natsArgs...)...); !strings.Contains(out, `"files":0`) || !strings.Contains(out, `"skipped":4`) {
		t.Errorf("a second import of the same export: %s, want every file skipped", out)
	}
	// export and import connect as serve does: a CA file that is no
	// certificate is refused, not ignored (they once dropped the NATS
	// credentials and TLS flags and connected in the clear).
	notCA := filepath.Join(dir, "not-a-ca.pem")
	if err := os.WriteFile(notCA, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"export", "--to", filepath.Join(dir, "refused.tar")}, {"import", e1}} {
		out := runFailing(t, depotfsBin, append(append(cmd, natsArgs...), "--nats-tls-ca", notCA)...)
		if !strings.Contains(out, "root certificate") {
			t.Errorf("%s with --nats-tls-ca naming no certificate: %s", cmd[0], out)
		}
	}
	runProgram(t, depotfsBin, append([]string{"export", "--to", e2}, natsArgs...)...)
	b := filepath.Join(dir, "b", "depot.db")
	runProgram(t, depotfsBin, "import", e2, "--db", b)
	runProgram(t, depotfsBin, "export", "--db", b, "--to", e3)

	m1, f1 := exportContents(t, e1)
	for _, e := range []string{e2, e3} {
		m, f := exportContents(t, e)
		if m != m1 {
			t.Errorf("%s manifest differs from the first export's:\n%s\nfirst:\n%s", filepath.Base(e), m, m1)
		}
		if len(f) != len(f1) {
			t.Errorf("%s: %d files, the first export %d", filepath.Base(e), len(f), len(f1))
		}
		for name, data := range f1 {
			if !bytes.Equal(f[name], data) {
				t.Errorf("%s: %s differs", filepath.Base(e), name)
			}
		}
	}
	for _, want := range []string{`"path":"/proj/big.bin"`, `"pinned":true`, `"mode":"0755"`, `"expires":"`, `"placeholder":true`, `"size":1234`, `"path":"/listed/sub","type":"dir"`, `"mtime":"2024-05-01T12:00:00.123456789Z"`} {
		if !strings.Contains(m1, want) {
			t.Errorf("the manifest lacks %s:\n%s", want, m1)
		}
	}
	r := startDaemon(t, daemonConfig{transport: overHTTP, db: b})
	if got, err := os.ReadFile(r.path("/proj/big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Errorf("big.bin after the round trip: %d bytes, %v", len(got), err)
	}
}
