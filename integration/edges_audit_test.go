package integration_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestRefusedCallsGrouped: 2,000 calls by a token without grants are a
// handful of audit records, grouped per identity and reason with their
// count, not one record each; 200 writes outside a token's grant on 200
// paths are one burst whose record lists the paths; every refused upload
// or archive PUT record names its destination, so "audit query --path"
// finds it. The counts add up to every refusal.
func TestRefusedCallsGrouped(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tokA, _ := issueToken(t, tokens, "tenant-a", "*:/a:rw")
	tokN, idN := issueToken(t, tokens, "no-grants")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokA}, args: []string{"--tokens", tokens}})
	a := tenant{tokA, d.connect(clientAuth{bearer: tokA})}

	const refusals, workers = 2000, 8
	start := time.Now()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rc := newRawClientWith(t, d.url, &http.Client{Transport: bearerTransport{tokN}})
			for i := w; i < refusals; i += workers {
				if st, r := rc.call(i, "guide_cache_file", fmt.Sprintf(`{"path":"/a/f%d","content":"x"}`, i)); st != http.StatusOK || r.Error == nil && (r.Result == nil || !r.Result.IsError) {
					t.Errorf("a call without grants: status %d %s; want it refused", st, r.raw)
					return
				}
			}
		})
	}
	const outside = 200
	for i := range outside {
		if env := a.call(t, "guide_cache_file", map[string]any{"path": fmt.Sprintf("/b/f%03d", i), "content": "x"}); env.Success {
			t.Fatal("a write outside the grant succeeded")
		}
	}
	u := beginUpload(t, d, map[string]any{"path": "/a/unpacked", "format": "tar.gz"})
	arch := makeTarGz(t, []tarEntry{{name: "link", typ: tar.TypeSymlink}})
	if r := put(t, u, bytes.NewReader(arch), int64(len(arch)), tokA); r.Env.Success {
		t.Error("an archive with a link was unpacked")
	}
	wg.Wait()
	elapsed := time.Since(start)
	d.stop()

	recs := auditRecords(t, d.auditLog())
	raw, err := os.ReadFile(d.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	nRecs, nCount, nBytes := 0, 0, 0
	for l := range bytes.Lines(raw) {
		if bytes.Contains(l, []byte(`"token_id":"`+idN+`"`)) {
			nBytes += len(l)
		}
	}
	aCount, aPaths := 0, map[string]bool{}
	for _, r := range recs {
		switch {
		case r.TokenID == idN && r.Event == "call":
			nRecs++
			nCount += max(r.Count, 1)
			if r.Decision != "deny" {
				t.Errorf("a record of the token without grants allows: %+v", r)
			}
		case r.Decision == "deny" && r.Tool == "guide_cache_file" && strings.Contains(r.Reason, "/b/"):
			aCount += max(r.Count, 1)
			for _, p := range r.Paths {
				aPaths[p] = true
			}
		}
	}
	// A burst writes its first refusals at once and the rest as one record a
	// window, so the bound grows with the windows the refusals spanned: 20
	// when they came within two windows (an idle machine takes about 15 s),
	// six a window more on a machine so loaded that they took longer.
	windows := int(elapsed/audit.DefaultBurstWindow) + 1
	bound := max(20, 6*(windows+1))
	t.Logf("%d refused calls of a token without grants in %v: %d audit records, %d bytes", refusals, elapsed.Round(time.Millisecond), nRecs, nBytes)
	if nRecs > bound || nCount != refusals {
		t.Errorf("%d records standing for %d refusals over %v; want at most %d standing for %d", nRecs, nCount, elapsed.Round(time.Millisecond), bound, refusals)
	}
	if aCount != outside || !aPaths["/b/f000"] || !aPaths["/b/f001"] || len(aPaths) < 64 {
		t.Errorf("the writes outside the grant: records stand for %d refusals naming %d paths; want %d naming at least 64 with /b/f000 and /b/f001", aCount, len(aPaths), outside)
	}
	code, out, errOut := runDepotfs(t, "audit", "query", "--audit-log", d.auditLog(), "--decision", "deny", "--path", "/a/unpacked")
	if code != 0 || !strings.Contains(out, "guide_begin_upload") {
		t.Errorf("audit query --path /a/unpacked finds no refused archive: exit %d\n%s%s", code, out, errOut)
	}
	if !slices.ContainsFunc(recs, func(r audit.Record) bool { return r.Decision == "deny" && slices.Contains(r.Paths, "/a/unpacked") }) {
		t.Error("no deny record of the refused archive names its destination")
	}
}
