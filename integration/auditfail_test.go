package integration_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// smallFS mounts a tmpfs of size bytes at a fresh directory, unmounted at
// cleanup, so a test can fill it.
func smallFS(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes to a file in dir until the filesystem is full.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

// TestAuditLogFull: when the disk holding the audit log fills up, the
// write whose record fails is answered as stored (with a warning), later
// calls are refused with a system error and store nothing more; once there is
// room again, calls work, and the log still verifies.
func TestAuditLogFull(t *testing.T) {
	t.Parallel()
	logDir := smallFS(t, 1<<20)
	log := filepath.Join(logDir, "audit.log")
	// No disk reserve: this test is about the audit log failing, which the
	// reserve (TestDiskFull) otherwise prevents by refusing writes first.
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--audit-log", log, "--disk-reserve", "0"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/before.txt", "content": "x"})
	filler := fill(t, logDir)

	// The log's last page may still have room for a record or two. The
	// first call whose record cannot be written has stored its change: it
	// succeeds, with a warning that it is not audited yet (an error would
	// make the agent repeat a write that happened). The next call is
	// refused.
	unaudited, failed := "", -1
	for i := range 20 {
		p := fmt.Sprintf("/full/%02d.txt", i)
		env := d.call("guide_cache_file", map[string]any{"path": p, "content": "x"})
		if env.Success {
			if slices.ContainsFunc(env.Warnings, func(w string) bool { return strings.Contains(w, "could not write this call's audit record") }) {
				unaudited = p
			}
			continue
		}
		if env.Error.Type != "system" || !strings.Contains(env.Error.Message, "audit log") {
			t.Fatalf("call %d: %+v, want a system error about the audit log", i, env.Error)
		}
		failed = i
		break
	}
	if failed < 0 || unaudited == "" {
		t.Fatalf("on a full disk: call %d refused, unaudited write %q; want one write stored with a warning, then refusals", failed, unaudited)
	}
	if b, err := os.ReadFile(d.path(unaudited)); err != nil || string(b) != "x" {
		t.Fatalf("the write answered with the warning is not stored: %q, %v", b, err)
	}
	d.waitLogLine("the failure in the log", "audit record not written")

	before := snapshot(t, d.mount)
	for i := range 3 {
		env := d.call("guide_cache_file", map[string]any{"path": fmt.Sprintf("/refused/%d.txt", i), "content": "x"})
		if env.Success || env.Error.Type != "system" {
			t.Fatalf("a call while the audit log is failing: %+v", env)
		}
	}
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Fatalf("calls refused for a failing audit log changed the depot:\n%s", diff)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// The first call after the disk has room writes its (refusal) record,
	// which clears the failure; from then on calls work.
	ok := false
	for range 2 {
		if env := d.call("guide_cache_file", map[string]any{"path": "/after.txt", "content": "x"}); env.Success {
			ok = true
			break
		}
	}
	if !ok {
		t.Fatal("calls still fail after the disk has room again")
	}
	d.stop()
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", log); code != 0 {
		t.Fatalf("verify after the disk was full: exit %d\n%s%s", code, out, errOut)
	}
	// The record of the unaudited write was kept and written once the log
	// had room.
	if !slices.ContainsFunc(auditRecords(t, log), func(r audit.Record) bool {
		return r.Tool == "guide_cache_file" && slices.Contains(r.Paths, unaudited) && r.Error == ""
	}) {
		t.Errorf("no audit record of %s, the write stored while the log was full", unaudited)
	}
}
