package integration_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// auditDaemon runs a daemon with a small rotation size, makes n allowed
// calls, stops it and returns its audit log's path.
func auditDaemon(t *testing.T, n int, extra ...string) (*daemon, string) {
	t.Helper()
	args := append([]string{"--audit-max-size", "4KiB"}, extra...)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: args})
	for i := range n {
		d.mustCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/a/f%03d.txt", i), "content": strconv.Itoa(i)})
	}
	d.stop()
	return d, d.auditLog()
}

// lastRecord returns the seq and hash of the last record of the current
// file of the log at path.
func lastRecord(t testing.TB, path string) (seq int, hash string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	last := lines[len(lines)-1]
	if _, err := fmt.Sscanf(string(last), `{"seq":%d,`, &seq); err != nil {
		t.Fatalf("last line %q: %v", last, err)
	}
	return seq, string(last[len(last)-66 : len(last)-2])
}

// serveOnce starts serve on the log's directory and returns its exit code
// and stderr; a serve that starts is stopped by runDepotfs's timeout, which
// fails the test.
func serveOnce(t *testing.T, log string) (int, string) {
	t.Helper()
	code, _, errOut := runDepotfs(t, "serve", "--db", filepath.Join(filepath.Dir(log), "depot.db"), "--no-mount", "--listen", "127.0.0.1:0", "--audit-max-size", "4KiB")
	return code, errOut
}

// TestAuditForgedRecord: a record appended after the
// checkpoint with seq, prev and a recomputed SHA-256 hash is named by
// 'audit verify' and refused by serve; a tail left between a write and its
// checkpoint is reported, and serve names it in a recovery record.
func TestAuditForgedRecord(t *testing.T) {
	t.Parallel()
	_, log := auditDaemon(t, 3)
	t.Run("forged", func(t *testing.T) {
		path := copyAuditLog(t, log)
		seq, head := lastRecord(t, path)
		body := fmt.Sprintf(`{"seq":%d,"time":"2026-03-01T12:00:00Z","event":"call","identity":"http:attacker","tool":"guide_cache_file","decision":"allow","duration_ms":1,"v":2,"prev":"%s"}`, seq+1, head)
		sum := sha256.Sum256([]byte(body))
		line := body[:len(body)-1] + `,"hash":"` + hex.EncodeToString(sum[:]) + "\"}\n"
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(line)
		f.Close()
		code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", path)
		if want := fmt.Sprintf("TAMPERED: record %d ", seq+1); code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "forged") {
			t.Fatalf("verify of a forged record: exit %d, want 1 and %q\n%s%s", code, want, out, errOut)
		}
		code, errOut = serveOnce(t, path)
		if want := fmt.Sprintf("record %d ", seq+1); code == 0 || !strings.Contains(errOut, want) {
			t.Fatalf("serve on a forged record: exit %d, want a refusal naming %q\n%s", code, want, errOut)
		}
	})
	t.Run("crash tail", func(t *testing.T) {
		path := copyAuditLog(t, log)
		seq, _ := lastRecord(t, path)
		cp, err := os.ReadFile(path + ".checkpoint")
		if err != nil {
			t.Fatal(err)
		}
		// A serve writes more records; then the checkpoint goes back to what
		// it was, as if the server died between writes and checkpoint.
		d := startDaemon(t, daemonConfig{transport: overHTTP, db: filepath.Join(filepath.Dir(path), "depot.db"), args: []string{"--audit-log", path}})
		d.mustCall("guide_cache_file", map[string]any{"path": "/a/later.txt", "content": "x"})
		d.stop()
		if err := os.WriteFile(path+".checkpoint", cp, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", path)
		if want := fmt.Sprintf("the checkpoint (record %d)", seq); code != 0 || !strings.Contains(errOut, want) || !strings.Contains(errOut, "never checkpointed") {
			t.Fatalf("verify of a crash tail: exit %d, want 0 and a warning %q\n%s%s", code, want, out, errOut)
		}
		d = startDaemon(t, daemonConfig{transport: overHTTP, db: filepath.Join(filepath.Dir(path), "depot.db"), args: []string{"--audit-log", path}})
		d.stop()
		if logs := d.logs.String(); !strings.Contains(logs, "never checkpointed") {
			t.Fatalf("serve continued a crash tail without a warning:\n%s", tail(logs, 20))
		}
		recs := auditRecords(t, path)
		last := recs[len(recs)-1]
		if last.Event != "recovery" || !strings.Contains(last.Reason, fmt.Sprintf("(record %d)", seq)) {
			t.Fatalf("last record %+v; want a recovery record naming the tail", last)
		}
	})
}

// TestServeVerifiesMiddle: serve refuses a log whose
// middle (a rotated file) was edited or deleted, naming the record, as
// verify does.
func TestServeVerifiesMiddle(t *testing.T) {
	t.Parallel()
	_, log := auditDaemon(t, 30)
	rotated, _ := filepath.Glob(log + ".0*")
	var files []string
	for _, f := range rotated {
		if isLogFile(log, f) {
			files = append(files, f)
		}
	}
	if len(files) < 3 {
		t.Fatalf("the log did not rotate: %q", files)
	}
	// A start on the untouched log seals the rotated files it verified.
	startDaemon(t, daemonConfig{transport: overHTTP, db: filepath.Join(filepath.Dir(log), "depot.db"), args: []string{"--audit-max-size", "4KiB"}}).stop()
	t.Run("edit", func(t *testing.T) {
		path := copyAuditLog(t, log)
		file, lines, i := recordLine(t, path, 5)
		edited := bytes.Replace(lines[i], []byte(`"/a/`), []byte(`"/b/`), 1)
		if bytes.Equal(edited, lines[i]) {
			t.Fatalf("record 5 names no /a/ path: %s", lines[i])
		}
		lines[i] = edited
		writeLines(t, file, lines)
		code, errOut := serveOnce(t, path)
		if code == 0 || !strings.Contains(errOut, "record 5 ") || !strings.Contains(errOut, "depotfs audit verify") {
			t.Fatalf("serve on an edited middle: exit %d\n%s", code, errOut)
		}
	})
	t.Run("deletion", func(t *testing.T) {
		path := copyAuditLog(t, log)
		file, lines, i := recordLine(t, path, 8)
		writeLines(t, file, append(lines[:i:i], lines[i+1:]...))
		code, errOut := serveOnce(t, path)
		if code == 0 || !strings.Contains(errOut, "record 8 is missing") {
			t.Fatalf("serve on a deleted middle record: exit %d\n%s", code, errOut)
		}
	})
}

// TestAuditRetention: with
// --audit-retain-size the rotated files stay within it, and the log kept
// still verifies.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	_, log := auditDaemon(t, 60, "--audit-retain-size", "8KiB")
	var total int64
	n := 0
	names, _ := filepath.Glob(log + ".0*")
	for _, f := range names {
		if isLogFile(log, f) && f != log {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			total += fi.Size()
			n++
		}
	}
	if total > 8<<10 || n == 0 {
		t.Fatalf("%d rotated files of %d bytes; want some, at most 8KiB", n, total)
	}
	code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", log)
	if code != 0 || !strings.Contains(out, "ok: ") || strings.Contains(out, "seq 1..") {
		t.Fatalf("verify after retention: exit %d\n%s%s", code, out, errOut)
	}
}

// TestSecondServeRefused: a second serve whose
// database lies in the same directory (so the same audit log) is refused
// at start, naming the process that holds the log.
func TestSecondServeRefused(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	other := filepath.Join(filepath.Dir(d.db), "other.db")
	code, _, errOut := runDepotfs(t, "serve", "--db", other, "--no-mount", "--listen", "127.0.0.1:0")
	if want := "pid " + strconv.Itoa(d.cmd.Process.Pid); code == 0 || !strings.Contains(errOut, want) {
		t.Fatalf("second serve on the same audit log: exit %d, want a refusal naming %q\n%s", code, want, errOut)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/after.txt", "content": "x"})
	d.stop()
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", d.auditLog()); code != 0 {
		t.Fatalf("verify after the refused second serve: exit %d\n%s%s", code, out, errOut)
	}
}
