package mcpserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestDoorRecordsDeferred: a door's request the grants allow (a WebDAV
// GET, PROPFIND) is recorded through AppendDeferred, since it changes
// nothing; a refused one (a write method) is recorded durably, as is a
// tool call.
func TestDoorRecordsDeferred(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.ok("guide_cache_file", m{"path": "/d/x.txt", "content": "hello"}, nil)
	base := httptestServer(t, e.srv)
	n := len(e.rec.records())
	for _, req := range []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/dav/d/x.txt", http.StatusOK},
		{"PROPFIND", "/dav/d/", http.StatusMultiStatus},
		{http.MethodPut, "/dav/d/x.txt", http.StatusMethodNotAllowed},
	} {
		r, err := http.NewRequest(req.method, base+req.path, strings.NewReader(""))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Depth", "1")
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != req.status {
			t.Fatalf("%s %s = %d, want %d", req.method, req.path, resp.StatusCode, req.status)
		}
	}
	e.rec.mu.Lock()
	recs, deferred := e.rec.recs, e.rec.deferred
	e.rec.mu.Unlock()
	for i, r := range recs {
		want := i >= n && r.Decision == audit.Allow
		if deferred[i] != want {
			t.Errorf("record %d (%s %s %v): deferred %v, want %v", i, r.Tool, r.Decision, r.Paths, deferred[i], want)
		}
	}
	if len(recs) != n+3 {
		t.Errorf("%d door records, want 3", len(recs)-n)
	}
}
