package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestBackupRight: an online backup needs a grant naming it (or full
// grants); a wildcard or a group grant, however wide, does not give it.
// A refused backup gets 403 and no body.
func TestBackupRight(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, &mcpserver.Options{Backup: func(ctx context.Context, w io.Writer, started func(uint64, int64)) error {
		started(7, 4)
		_, err := io.WriteString(w, "data")
		return err
	}})
	t.Cleanup(func() { srv.Close() })
	for _, c := range []struct {
		name   string
		id     identity.Identity
		status int
	}{
		{"full grants", identity.Identity{Transport: "http", Subject: "op", Full: true}, http.StatusOK},
		{"backup grant", identity.Identity{Transport: "http", Subject: "op", Grants: []grant.Grant{{Tool: mcpserver.BackupTool, Prefix: "/", Access: grant.Read}}}, http.StatusOK},
		{"wildcard", identity.Identity{Transport: "http", Subject: "agent", Grants: []grant.Grant{{Tool: grant.AnyTool, Prefix: "/", Access: grant.ReadWrite}}}, http.StatusForbidden},
		{"backup on a prefix", identity.Identity{Transport: "http", Subject: "agent", Grants: []grant.Grant{{Tool: mcpserver.BackupTool, Prefix: "/a", Access: grant.Read}}}, http.StatusForbidden},
		{"no grants", identity.Identity{Transport: "http", Subject: "agent"}, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				srv.Handler().ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), c.id)))
			}))
			defer ts.Close()
			resp, err := http.Get(ts.URL + mcpserver.BackupPath)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, c.status)
			}
			if c.status == http.StatusOK && (string(body) != "data" || resp.Header.Get(mcpserver.BackupRevisionHeader) != "7") {
				t.Errorf("body %q, revision %q", body, resp.Header.Get(mcpserver.BackupRevisionHeader))
			}
			if c.status != http.StatusOK && string(body) == "data" {
				t.Error("a refused backup sent the data")
			}
		})
	}
}
