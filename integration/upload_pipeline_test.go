package integration_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRawUploadAuditFailsAfterCommit: a raw upload's PUT follows the rule
// of a tool call when the disk holding the audit log fills up. The PUT
// whose record fails has stored its file: it is answered as stored, with
// the warning a call gets (an error would make the client send the file
// again), and the file is on the mount; the next PUT is refused.
func TestRawUploadAuditFailsAfterCommit(t *testing.T) {
	t.Parallel()
	logDir := smallFS(t, 1<<20)
	log := filepath.Join(logDir, "audit.log")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--audit-log", log, "--disk-reserve", "0"}})
	// Every upload is begun before the disk fills: guide_begin_upload's
	// own record must not be the first to fail.
	const n = 20
	urls := make([]string, n)
	for i := range urls {
		urls[i] = beginUpload(t, d, map[string]any{"path": fmt.Sprintf("/put/%02d.bin", i)})
	}
	fill(t, logDir)

	unaudited, failed := "", -1
	for i, u := range urls {
		p := fmt.Sprintf("/put/%02d.bin", i)
		r := put(t, u, strings.NewReader("raw bytes"), int64(len("raw bytes")), "")
		if r.Env.Success {
			if r.Status != http.StatusOK {
				t.Fatalf("PUT %d: success with status %d", i, r.Status)
			}
			if slices.ContainsFunc(r.Env.Warnings, func(w string) bool { return strings.Contains(w, "could not write this call's audit record") }) {
				unaudited = p
			}
			continue
		}
		if r.Env.Error.Type != "system" || !strings.Contains(r.Env.Error.Message, "audit log") {
			t.Fatalf("PUT %d: %d %+v, want a system error about the audit log", i, r.Status, r.Env.Error)
		}
		failed = i
		break
	}
	if failed < 0 || unaudited == "" {
		t.Fatalf("on a full disk: PUT %d refused, unaudited PUT %q; want one PUT stored with a warning, then refusals", failed, unaudited)
	}
	if b, err := os.ReadFile(d.path(unaudited)); err != nil || string(b) != "raw bytes" {
		t.Fatalf("the PUT answered with the warning is not stored: %q, %v", b, err)
	}
	if _, err := os.Stat(d.path(fmt.Sprintf("/put/%02d.bin", failed))); err == nil {
		t.Errorf("the PUT refused for the audit log stored its file")
	}
}
