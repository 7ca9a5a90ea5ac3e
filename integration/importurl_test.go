package integration_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestImportThroughServer: an offline export of a bolt depot is imported
// with --url into a running server. A caller without the backup right to
// write gets 403, a truncated export is refused with a clear error, and
// both leave the depot unchanged; the caller with backup:/:w imports it,
// the mount serves the files, and an export of the server's depot has the
// same manifest (paths, bytes, modes, mtimes, pins, expiries,
// placeholders, directories) and bytes. Each import is one audit record,
// with its counts. --url with --db is refused.
func TestImportThroughServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1, e2, cut := filepath.Join(dir, "e1.tar"), filepath.Join(dir, "e2.tar"), filepath.Join(dir, "cut.tar")
	big := seedExport(t, e1)
	whole, err := os.ReadFile(e1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	tokens := filepath.Join(dir, "tokens.json")
	op, _ := issueToken(t, tokens, "op", "backup:/:w", "guide:/:rw")
	agent, _ := issueToken(t, tokens, "agent", "guide:/:rw")
	s := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: op}})
	unchanged := func(after string) {
		t.Helper()
		for _, p := range []string{"/proj", "/other", "/listed"} {
			if _, err := os.Stat(s.path(p)); !os.IsNotExist(err) {
				t.Errorf("after %s, %s: %v; want the depot unchanged", after, p, err)
			}
		}
	}

	code, _, stderr := runDepotfsIn(t, "", []string{"DEPOTFS_TOKEN=" + agent}, "import", e1, "--url", s.url)
	if code == 0 || !strings.Contains(stderr, "403") || !strings.Contains(stderr, "backup:/:w") {
		t.Errorf("import without the backup right: exit %d\n%s", code, stderr)
	}
	unchanged("a refused import")
	code, _, stderr = runDepotfsIn(t, "", []string{"DEPOTFS_TOKEN=" + op}, "import", cut, "--url", s.url)
	if code == 0 || !strings.Contains(stderr, "not a complete depotfs export") {
		t.Errorf("import of a truncated export: exit %d\n%s", code, stderr)
	}
	unchanged("a truncated import")
	if msg := runFailing(t, depotfsBin, "import", e1, "--url", s.url, "--db", filepath.Join(dir, "x.db")); !strings.Contains(msg, "not both") {
		t.Errorf("--url with --db: %s", msg)
	}

	code, stdout, stderr := runDepotfsIn(t, "", []string{"DEPOTFS_TOKEN=" + op}, "import", e1, "--url", s.url, "--json")
	if code != 0 || !strings.Contains(stdout, `"files":4`) || !strings.Contains(stdout, `"placeholders":1`) {
		t.Fatalf("import --url: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got, err := os.ReadFile(s.path("/proj/big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Errorf("big.bin through the mount after the import: %d bytes, %v", len(got), err)
	}
	var imports []audit.Record
	for _, r := range auditRecords(t, s.auditLog()) {
		if r.Tool == "import" {
			imports = append(imports, r)
		}
	}
	if len(imports) != 3 || imports[0].Decision != audit.Deny || !strings.HasPrefix(imports[2].Status, "4 files") {
		t.Errorf("audit records of the imports: %+v; want one per call: refused, failed, then the 4 files", imports)
	}
	s.stop()
	runProgram(t, depotfsBin, "export", "--db", s.db, "--to", e2)
	m1, f1 := exportContents(t, e1)
	m2, f2 := exportContents(t, e2)
	if m2 != m1 {
		t.Errorf("the server's manifest after the import:\n%s\nthe export's:\n%s", m2, m1)
	}
	if len(f2) != len(f1) {
		t.Errorf("%d files after the import, %d in the export", len(f2), len(f1))
	}
	for name, data := range f1 {
		if !bytes.Equal(f2[name], data) {
			t.Errorf("%s differs after the import", name)
		}
	}
}
