package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestImportRight: an import needs the backup right to write, by a grant
// naming it (or full grants); the right to read it, a wildcard or a group
// grant does not give it. A refused import gets 403 and its body is never
// read; a GET gets 405.
func TestImportRight(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	var imports atomic.Int64
	srv := mcpserver.New(st, &mcpserver.Options{Import: func(ctx context.Context, r io.Reader, _ func(string) error) (mcpserver.ImportResult, error) {
		imports.Add(1)
		b, err := io.ReadAll(r)
		return mcpserver.ImportResult{Files: 1, Bytes: int64(len(b))}, err
	}})
	t.Cleanup(func() { srv.Close() })
	backup := func(prefix string, a grant.Access) []grant.Grant {
		return []grant.Grant{{Tool: mcpserver.BackupTool, Prefix: prefix, Access: a}}
	}
	for _, c := range []struct {
		name   string
		method string
		id     identity.Identity
		status int
	}{
		{"full grants", http.MethodPut, identity.Identity{Transport: "http", Subject: "op", Full: true}, http.StatusOK},
		{"backup write", http.MethodPut, identity.Identity{Transport: "http", Subject: "op", Grants: backup("/", grant.Write)}, http.StatusOK},
		{"backup read", http.MethodPut, identity.Identity{Transport: "http", Subject: "op", Grants: backup("/", grant.Read)}, http.StatusForbidden},
		{"backup on a prefix", http.MethodPut, identity.Identity{Transport: "http", Subject: "op", Grants: backup("/a", grant.ReadWrite)}, http.StatusForbidden},
		{"wildcard", http.MethodPut, identity.Identity{Transport: "http", Subject: "agent", Grants: []grant.Grant{{Tool: grant.AnyTool, Prefix: "/", Access: grant.ReadWrite}}}, http.StatusForbidden},
		{"no grants", http.MethodPut, identity.Identity{Transport: "http", Subject: "agent"}, http.StatusForbidden},
		{"GET", http.MethodGet, identity.Identity{Transport: "http", Subject: "op", Full: true}, http.StatusMethodNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				srv.Handler().ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), c.id)))
			}))
			defer ts.Close()
			before := imports.Load()
			req, err := http.NewRequest(c.method, ts.URL+mcpserver.ImportPath, strings.NewReader("export"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, c.status)
			}
			if ran := imports.Load() - before; (c.status == http.StatusOK) != (ran == 1) {
				t.Errorf("status %d, Import ran %d times", resp.StatusCode, ran)
			}
			var res mcpserver.ImportResult
			if c.status == http.StatusOK && (json.Unmarshal(body, &res) != nil || res.Bytes != int64(len("export"))) {
				t.Errorf("answer %q, want the result as JSON", body)
			}
		})
	}
}
