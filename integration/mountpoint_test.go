package integration_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNonEmptyMountpointRefused: serve refuses a --mount directory with
// entries, says why and how to proceed, sends no READY=1, and leaves the
// directory and the database as they were; --allow-non-empty-mount
// mounts over it.
func TestNonEmptyMountpointRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mount := filepath.Join(dir, "mnt")
	if err := os.MkdirAll(mount, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mount, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, notes := listenNotify(t, mount)
	cmd := exec.Command(depotfsBin, "serve", "--db", filepath.Join(dir, "depot.db"), "--mount", mount, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+sock)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = cmd.CombinedOutput()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("serve over a non-empty mountpoint did not exit:\n%s", out)
	}
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 {
		t.Fatalf("exit %d (%v), want 1:\n%s", code, err, out)
	}
	for _, want := range []string{"not empty", "notes.txt", "--allow-non-empty-mount"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the error does not say %q:\n%s", want, out)
		}
	}
	if isMounted(mount) {
		t.Error("the refused mountpoint is mounted")
	}
	// Anything depotfs sent is queued before this sentinel.
	c, err := net.Dial("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("SENTINEL")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if n := nextNotification(t, notes, ""); n.msg != "SENTINEL" {
		t.Errorf("a refused start notified systemd: %q", n.msg)
	}
	if got, err := os.ReadFile(filepath.Join(mount, "notes.txt")); err != nil || string(got) != "mine" {
		t.Errorf("the directory's file after the refusal: %q, %v", got, err)
	}

	d := startDaemon(t, daemonConfig{transport: overHTTP, mount: mount, args: []string{"--allow-non-empty-mount"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/over.txt", "content": "over"})
	if _, err := os.Stat(filepath.Join(mount, "notes.txt")); !os.IsNotExist(err) {
		t.Errorf("the hidden file shows through the mount: %v", err)
	}
}
