package integration_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestWebDAVAuditCrash: a WebDAV GET's record is written before the
// reply and made durable shortly after it (the door only reads), so a
// SIGKILL right after many GETs loses none of their records (the kernel
// holds what was written), the log verifies, and the restarted daemon
// continues it, naming any records past the checkpoint in a recovery
// record.
func TestWebDAVAuditCrash(t *testing.T) {
	t.Parallel()
	d, tokA, _, _ := davDaemon(t)
	const gets = 300
	for i := range gets {
		req, err := http.NewRequest(http.MethodGet, d.base()+"/dav/a/x.txt", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokA)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(body) != davTree["/a/x.txt"] {
			t.Fatalf("GET %d = %d %q, %v", i, resp.StatusCode, body, err)
		}
	}
	d.kill()

	log := d.auditLog()
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", log); code != 0 {
		t.Fatalf("verify after SIGKILL: exit %d\n%s%s", code, out, errOut)
	}
	if n := davGets(t, log); n != gets {
		t.Fatalf("%d records of allowed WebDAV GETs after SIGKILL, want %d", n, gets)
	}

	d2 := startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: d.cfg.args, client: d.cfg.client})
	d2.stop()
	if code, out, errOut := runDepotfs(t, "audit", "verify", "--audit-log", log); code != 0 || !strings.Contains(out, "ok: ") {
		t.Fatalf("verify after the restart: exit %d\n%s%s", code, out, errOut)
	}
	if n := davGets(t, log); n != gets {
		t.Fatalf("%d records of allowed WebDAV GETs after the restart, want %d", n, gets)
	}
	for _, r := range auditRecords(t, log) {
		if r.Event == audit.EventRecovery {
			t.Logf("recovery record: %s", r.Reason) // none if the flusher ran before the kill
		}
	}
}

// davGets counts the allowed WebDAV records of /a/x.txt in the log.
func davGets(t testing.TB, log string) int {
	t.Helper()
	n := 0
	for _, r := range auditRecords(t, log) {
		if r.Tool == "webdav" && r.Decision == audit.Allow && len(r.Paths) == 1 && r.Paths[0] == "/a/x.txt" {
			n++
		}
	}
	return n
}
