package integration_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDatabaseLocked: a second depotfs on the same database, as an MCP
// client launching it over stdio would start it, exits at once naming the
// holder's pid and command and saying what to do; the first keeps serving.
func TestDatabaseLocked(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	cmd := exec.Command(depotfsBin, "serve", "--stdio", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "mnt"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err == nil || cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("second serve on the same database: %v\n%s", err, out)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the refusal took %v", took)
	}
	for _, want := range []string{"database is locked", "pid " + strconv.Itoa(d.cmd.Process.Pid), "depotfs serve --db " + d.db,
		"kill " + strconv.Itoa(d.cmd.Process.Pid), "HTTP endpoint", "--db"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/still.txt", "content": "serving"})
}
