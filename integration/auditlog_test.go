package integration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runDepotfs runs the binary and returns its exit code and output; a run
// longer than a minute fails the test.
func runDepotfs(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runDepotfsWith(t, time.Minute, "", nil, args...)
}

// runDepotfsWith runs the binary in dir (the test's own when empty) with
// env added to the environment, and returns its exit code and output; a
// run longer than limit fails the test.
func runDepotfsWith(t testing.TB, limit time.Duration, dir string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, depotfsBin, args...)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		code = ee.ExitCode()
	default:
		t.Fatalf("depotfs %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return code, out.String(), errOut.String()
}

// copyAuditLog copies every file of the audit log at path (rotated files,
// key, checkpoint) into a fresh directory and returns the copy's path.
func copyAuditLog(t testing.TB, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	names, err := filepath.Glob(path + "*")
	if err != nil || len(names) < 3 {
		t.Fatalf("audit log files %q: %v", names, err)
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(dst), filepath.Base(n)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// recordLine finds the log file and line index holding record seq.
func recordLine(t testing.TB, path string, seq int) (file string, lines [][]byte, i int) {
	t.Helper()
	names, _ := filepath.Glob(path + "*")
	for _, n := range names {
		if !isLogFile(path, n) {
			continue
		}
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(b, []byte("\n"))
		for i, l := range lines {
			if bytes.HasPrefix(l, fmt.Appendf(nil, `{"seq":%d,`, seq)) {
				return n, lines, i
			}
		}
	}
	t.Fatalf("record %d not found in %s", seq, path)
	return "", nil, 0
}

// isLogFile reports whether name is a file of records of the log at path:
// the current file or a rotated one (path.<20 digits>), not its key,
// checkpoint, seals or lock.
func isLogFile(path, name string) bool {
	rest, ok := strings.CutPrefix(name, path)
	return ok && (rest == "" || len(rest) == 21 && strings.Trim(rest[1:], "0123456789") == "")
}

func writeLines(t testing.TB, file string, lines [][]byte) {
	t.Helper()
	if err := os.WriteFile(file, bytes.Join(lines, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditVerify is Proof 3 through the real binary: the audit log a
// daemon wrote (rotated across files) passes 'depotfs audit verify'; after
// an edit, a deletion, a reorder or a truncation, verify fails and names
// the record, and serve refuses to extend a truncated log.
func TestAuditVerify(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--audit-max-size", "4KiB", "--grants", "guide:/projects:rw"}})
	for i := range 12 {
		d.mustCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/projects/f%02d.txt", i), "content": fmt.Sprint(i)})
		if env := d.call("guide_cache_file", map[string]any{"path": fmt.Sprintf("/elsewhere/%d", i), "content": "x"}); env.Success {
			t.Fatal("a call outside the grants succeeded")
		}
	}
	d.stop()
	log := d.auditLog()
	if files, _ := filepath.Glob(log + ".0*"); len(files) < 2 {
		t.Fatalf("the log did not rotate at 4KiB: %q", files)
	}

	code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", log)
	if code != 0 || !strings.Contains(out, "ok: ") || !strings.Contains(out, "24 record(s)") {
		t.Fatalf("verify of the untouched log: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runDepotfs(t, "audit", "query", "--audit-log", log, "--decision", "deny", "--path", "/elsewhere")
	if code != 0 || strings.Count(out, "no grant allows write to /elsewhere/") != 12 {
		t.Errorf("query of the denials: exit %d\n%s", code, out)
	}

	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   []string
	}{
		{"edit", func(t *testing.T, path string) {
			// Record 7 is the allowed call of i=3; the edit hides which
			// file it wrote.
			file, lines, i := recordLine(t, path, 7)
			edited := bytes.Replace(lines[i], []byte("/projects/f03.txt"), []byte("/projects/f99.txt"), 1)
			if bytes.Equal(edited, lines[i]) {
				t.Fatalf("record 7 is not the write of /projects/f03.txt: %s", lines[i])
			}
			lines[i] = edited
			writeLines(t, file, lines)
		}, []string{"TAMPERED: record 7 ", "modified"}},
		{"deletion", func(t *testing.T, path string) {
			file, lines, i := recordLine(t, path, 10)
			writeLines(t, file, append(lines[:i:i], lines[i+1:]...))
		}, []string{"TAMPERED: record 11 ", "record 10 is missing"}},
		{"reorder", func(t *testing.T, path string) {
			file, lines, i := recordLine(t, path, 13)
			if j := i + 1; j < len(lines) && len(lines[j]) > 0 {
				lines[i], lines[j] = lines[j], lines[i]
			} else {
				t.Fatalf("record 13 is the last of its file; pick another")
			}
			writeLines(t, file, lines)
		}, []string{"TAMPERED: record 14 ", "TAMPERED: record 13 ", "out of order"}},
		{"truncation", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(b, []byte("\n"))
			writeLines(t, path, lines[:len(lines)-3]) // the last element is empty
		}, []string{"truncated", "records 23..24 were cut off"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copyAuditLog(t, log)
			if code, out, _ := runDepotfs(t, "audit", "verify", "--audit-log", path); code != 0 {
				t.Fatalf("the copy does not verify before tampering:\n%s", out)
			}
			tt.tamper(t, path)
			code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", path)
			if code != 1 {
				t.Fatalf("verify after %s: exit %d, want 1\n%s%s", tt.name, code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("verify output lacks %q:\n%s", w, out)
				}
			}
		})
	}

	t.Run("serve refuses a truncated log", func(t *testing.T) {
		path := copyAuditLog(t, log)
		b, _ := os.ReadFile(path)
		lines := bytes.SplitAfter(b, []byte("\n"))
		writeLines(t, path, lines[:len(lines)-2])
		dir := filepath.Dir(path)
		code, _, errOut := runDepotfs(t, "serve", "--db", filepath.Join(dir, "depot.db"), "--no-mount", "--listen", "127.0.0.1:0")
		if code == 0 || !strings.Contains(errOut, "cut off") || !strings.Contains(errOut, "depotfs audit verify") {
			t.Fatalf("serve on a truncated audit log: exit %d\n%s", code, errOut)
		}
	})
}
