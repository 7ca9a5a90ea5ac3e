package integration_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"filippo.io/age"
)

// writeAgeIdentity writes a new age identity file and returns its path and
// its recipient.
func writeAgeIdentity(t *testing.T) (string, string) {
	t.Helper()
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.agekey")
	if err := os.WriteFile(path, []byte(id.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, id.Recipient().String()
}

// TestBackupToAgeRecipients takes an online backup and an offline export
// of a sealed depot encrypted to an age recipient: neither file holds the
// content, the names or the audit log's key in the clear (the control
// without a recipient holds the names and the key); verify and restore
// need the identity, and the restored depot serves the file with its key.
func TestBackupToAgeRecipients(t *testing.T) {
	t.Parallel()
	key := writeKeyFile(t)
	ident, recipient := writeAgeIdentity(t)
	_, otherRecipient := writeAgeIdentity(t)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--key-file", key}})
	// The name is readable in a sealed database (by design), not in a
	// backup encrypted to a recipient.
	name := "quarterly-report-f81d2.txt"
	content := sealMarker + " body\n"
	d.mustCall("guide_cache_file", map[string]any{"path": "/" + name, "content": content})

	dir := t.TempDir()
	enc, clear := filepath.Join(dir, "enc.dfsbak"), filepath.Join(dir, "clear.dfsbak")
	for file, extra := range map[string][]string{enc: {"--recipient", recipient, "--recipient", otherRecipient}, clear: nil} {
		args := append([]string{"backup", "--url", d.url, "--to", file}, extra...)
		if code, out, errOut := runDepotfs(t, args...); code != 0 {
			t.Fatalf("backup %v: exit %d\n%s%s", extra, code, out, errOut)
		}
	}
	auditKey, err := os.ReadFile(filepath.Join(filepath.Dir(d.db), "audit.log.key"))
	if err != nil || len(auditKey) < 16 {
		t.Fatalf("audit key: %d bytes, %v", len(auditKey), err)
	}
	encBytes, _ := os.ReadFile(enc)
	clearBytes, _ := os.ReadFile(clear)
	if !bytes.HasPrefix(encBytes, []byte("age-encryption.org/v1\n")) {
		t.Fatalf("the backup with --recipient is not an age file: %q", encBytes[:min(40, len(encBytes))])
	}
	for what, b := range map[string][]byte{"the content": []byte(sealMarker), "the name": []byte(name), "the audit key": auditKey} {
		if bytes.Contains(encBytes, b) {
			t.Errorf("the encrypted backup holds %s in the clear", what)
		}
		if what != "the content" && !bytes.Contains(clearBytes, b) {
			t.Errorf("the control backup does not hold %s: the test looks for the wrong bytes", what)
		}
	}

	code, out, errOut := runDepotfs(t, "backup", "verify", enc)
	if code == 0 || !strings.Contains(errOut, "--identity") {
		t.Errorf("verify of an encrypted backup without --identity: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runDepotfs(t, "backup", "verify", enc, "--identity", ident, "--key-file", key); code != 0 || !strings.Contains(out, "1 file(s) whose content matches") {
		t.Errorf("verify with the identity and the key: exit %d\n%s%s", code, out, errOut)
	}
	restored := filepath.Join(t.TempDir(), "restored.db")
	if code, out, errOut := runDepotfs(t, "restore", enc, "--db", restored); code == 0 || !strings.Contains(errOut, "--identity") {
		t.Errorf("restore without --identity: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(restored); err == nil {
		t.Error("a refused restore created the database")
	}
	if code, out, errOut := runDepotfs(t, "restore", enc, "--db", restored, "--identity", ident); code != 0 {
		t.Fatalf("restore with the identity: exit %d\n%s%s", code, out, errOut)
	}
	d.stop()

	// An export, offline, encrypted the same way, imported back into a
	// new sealed depot.
	exp := filepath.Join(dir, "depot.tar.age")
	if code, out, errOut := runDepotfs(t, "export", "--db", d.db, "--key-file", key, "--to", exp, "--recipient", recipient); code != 0 {
		t.Fatalf("export --recipient: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(exp); !bytes.HasPrefix(b, []byte("age-encryption.org/v1\n")) || bytes.Contains(b, []byte(sealMarker)) {
		t.Error("the export with --recipient is not an age file, or holds the marker")
	}
	imported := filepath.Join(t.TempDir(), "imported.db")
	if code, out, errOut := runDepotfs(t, "import", exp, "--db", imported, "--key-file", key); code == 0 || !strings.Contains(errOut, "--identity") {
		t.Errorf("import without --identity: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := runDepotfs(t, "import", exp, "--db", imported, "--key-file", key, "--identity", ident); code != 0 || !strings.Contains(out, "imported 1 files") {
		t.Fatalf("import --identity: exit %d\n%s%s", code, out, errOut)
	}

	for _, db := range []string{restored, imported} {
		d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: db, args: []string{"--key-file", key}})
		if got, err := os.ReadFile(d2.path("/" + name)); err != nil || string(got) != content {
			t.Errorf("%s: the file through the mount: %q, %v", filepath.Base(db), got, err)
		}
		d2.stop()
		if n := countIn(t, db); n != 0 {
			t.Errorf("%s holds the marker %d times", filepath.Base(db), n)
		}
	}
}
