package integration_test

import (
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cacheRevision writes content to p and returns the revision of the write.
func cacheRevision(d *daemon, p, content string, extra map[string]any) (envelope, uint64) {
	d.t.Helper()
	args := map[string]any{"path": p, "content": content}
	for k, v := range extra {
		args[k] = v
	}
	env := d.call("guide_cache_file", args)
	if !env.Success {
		return env, 0
	}
	return env, uint64(env.Data["revision"].(float64))
}

// fileSums hashes the files of dir (not below it), by name, but for the
// database's lock file, which names the last process that opened it.
func fileSums(t testing.TB, dir string) map[string][32]byte {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][32]byte{}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), ".lock") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = sha256.Sum256(b)
	}
	return out
}

// TestRestoreForceFailedRenameKeepsOldDepot: restore --force whose rename
// of the audit log fails (after the database was renamed in) puts the old
// database and audit log back byte for byte, leaves nothing aside, and the
// old depot serves its files, including one written after the backup.
func TestRestoreForceFailedRenameKeepsOldDepot(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	cacheRevision(d, "/a.txt", "in the backup", nil)
	file := filepath.Join(t.TempDir(), "b.dfsbak")
	runProgram(t, depotfsBin, "backup", "--url", d.url, "--to", file)
	cacheRevision(d, "/b.txt", "after the backup", nil)
	d.stop()
	dir := filepath.Dir(d.db)
	before := fileSums(t, dir)

	cmd := exec.Command(depotfsBin, "restore", file, "--db", d.db, "--force")
	cmd.Env = append(os.Environ(), "DEPOTFS_TEST_RESTORE_FAIL_RENAME=audit.log")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("restore with a failing rename succeeded: %s", out)
	}
	if !strings.Contains(string(out), "old files are back") {
		t.Errorf("restore's error does not say the old files are back: %s", out)
	}
	after := fileSums(t, dir)
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s changed by the failed restore", name)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("the failed restore left %s", name)
		}
	}
	if out := runProgram(t, depotfsBin, "audit", "verify", "--db", d.db); !strings.HasPrefix(out, "ok:") {
		t.Errorf("audit verify after the failed restore: %s", out)
	}
	r := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db})
	for p, want := range map[string]string{"/a.txt": "in the backup", "/b.txt": "after the backup"} {
		if got, err := os.ReadFile(r.path(p)); err != nil || string(got) != want {
			t.Errorf("after the failed restore %s = %q, %v; want %q", p, got, err, want)
		}
	}
}

// TestRestoreRevisionsNotReused: an agent holds the revision of the last
// write before the depot was lost; after a restore of an earlier backup,
// as many writes of the same path as were lost get revisions above it, and
// a conditional write with the held revision is a conflict, never a match
// with another version. The same holds when the lost database is gone
// (the margin from the backup's time alone).
func TestRestoreRevisionsNotReused(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		name := "old database still there"
		if lost {
			name = "old database gone"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := startDaemon(t, daemonConfig{transport: overHTTP})
			cacheRevision(d, "/f.txt", "v0", nil)
			file := filepath.Join(t.TempDir(), "b.dfsbak")
			runProgram(t, depotfsBin, "backup", "--url", d.url, "--to", file)
			var held uint64
			const lostWrites = 5
			for i := range lostWrites {
				_, held = cacheRevision(d, "/f.txt", "lost "+string(rune('a'+i)), nil)
			}
			d.stop()
			if lost {
				if err := os.Remove(d.db); err != nil {
					t.Fatal(err)
				}
			}
			runProgram(t, depotfsBin, "restore", file, "--db", d.db, "--force")
			r := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db})
			for i := range lostWrites {
				if _, rev := cacheRevision(r, "/f.txt", "new "+string(rune('a'+i)), nil); rev <= held {
					t.Errorf("write %d after the restore got revision %d, not above %d, which the lost depot handed out", i, rev, held)
				}
			}
			env, _ := cacheRevision(r, "/f.txt", "stale writer", map[string]any{"if_revision": held})
			if env.Success || env.Error == nil || env.Error.Type != "conflict" {
				t.Errorf("a write with if_revision %d, held from the lost depot, after the restore: %+v; want a conflict", held, env)
			}
		})
	}
}
