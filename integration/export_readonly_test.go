package integration_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
)

// downgradeTo2 rewrites the closed database at path in the layout of
// schema 2, as the depotfs before versions wrote it: no versions and
// snapshots buckets, 40-byte blob records. The depot must hold no
// retained version.
func downgradeTo2(t testing.TB, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, name := range []string{"versions", "snapshots"} {
			if err := tx.DeleteBucket([]byte(name)); err != nil {
				return err
			}
		}
		blobs := tx.Bucket([]byte("blobs"))
		old := map[string][]byte{}
		if err := blobs.ForEach(func(k, v []byte) error { old[string(k)] = append([]byte(nil), v[:40]...); return nil }); err != nil {
			return err
		}
		for k, v := range old {
			if err := blobs.Put([]byte(k), v); err != nil {
				return err
			}
		}
		return tx.Bucket([]byte("meta")).Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, 2})
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestExportNeverChangesTheDatabase: export --db of a database written by
// an older depotfs reads it as it is and leaves its bytes and mtime
// unchanged (so the depotfs that wrote it can still open it); a mistyped
// --db fails and creates nothing; only 'depotfs upgrade' upgrades it,
// keeping the old file, after which serve serves the files.
func TestExportNeverChangesTheDatabase(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	data := pseudoRandom(300<<10, 26)
	pushBytes(d, "/old/a.bin", data, nil)
	pushBytes(d, "/old/b.txt", []byte("written by the old depotfs\n"), nil)
	d.stop()
	downgradeTo2(t, d.db)
	before, err := os.ReadFile(d.db)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(d.db)

	dir := t.TempDir()
	out := filepath.Join(dir, "e.tar")
	runProgram(t, depotfsBin, "export", "--db", d.db, "--to", out)
	after, _ := os.ReadFile(d.db)
	fi2, _ := os.Stat(d.db)
	if !bytes.Equal(before, after) || !fi.ModTime().Equal(fi2.ModTime()) {
		t.Errorf("export changed the database (mtime %v -> %v, bytes equal %v)", fi.ModTime(), fi2.ModTime(), bytes.Equal(before, after))
	}
	manifest, files := exportContents(t, out)
	if !bytes.Equal(files["files/old/a.bin"], data) || !strings.Contains(manifest, `"path":"/old/b.txt"`) {
		t.Errorf("export of the old database: %d files, a.bin %d bytes; manifest:\n%s", len(files), len(files["files/old/a.bin"]), manifest)
	}
	if _, err := os.Stat(bolt2Copy(d.db)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("export made a pre-upgrade copy: %v", err)
	}

	typo := filepath.Join(dir, "dpeot.db")
	msg := runFailing(t, depotfsBin, "export", "--db", typo, "--to", filepath.Join(dir, "typo.tar"))
	if !strings.Contains(msg, "no such file") {
		t.Errorf("export of a mistyped --db: %s", msg)
	}
	for _, p := range []string{typo, filepath.Join(dir, "typo.tar")} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("export of a mistyped --db left %s: %v", p, err)
		}
	}

	if msg := runProgram(t, depotfsBin, "upgrade", "--db", d.db); !strings.Contains(msg, bolt2Copy(d.db)) {
		t.Errorf("upgrade: %s; want it to name the copy it keeps", msg)
	}
	if kept, err := os.ReadFile(bolt2Copy(d.db)); err != nil || len(kept) == 0 {
		t.Errorf("the copy kept by upgrade: %d bytes, %v", len(kept), err)
	}
	r := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db})
	if got, err := os.ReadFile(r.path("/old/a.bin")); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after the upgrade a.bin: %d bytes, %v", len(got), err)
	}
}

// bolt2Copy is where an upgrade keeps a schema 2 database at db.
func bolt2Copy(db string) string { return db + ".schema2" }
