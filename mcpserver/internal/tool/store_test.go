package tool

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestStoreReads checks the guarded read operations a read-only tool uses:
// each needs read access to its path, and a listing leaves out children
// below a denied prefix.
func TestStoreReads(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	for _, p := range []string{"/p/a/x", "/p/a/secret/k", "/p/b/y"} {
		if _, err := st.Put(ctx, store.PutRequest{Path: p, Data: []byte(p)}); err != nil {
			t.Fatal(err)
		}
	}
	host, err := policy.NewHost(nil, []string{"/p/a/secret"})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestRuntime(st, host)
	reader := identity.Identity{Transport: "test", Subject: "reader", Grants: []grant.Grant{
		{Tool: "provider", Prefix: "/p/a", Access: grant.Read},
		{Tool: "provider", Prefix: "/p/b", Access: grant.Write},
	}}
	c := s.NewCall(identity.NewContext(ctx, reader), "read_file", "provider")

	if e, err := c.Store().Stat(ctx, "/p/a/x"); err != nil || e.Path != "/p/a/x" {
		t.Errorf("Stat inside a read grant: %v %v", e, err)
	}
	content, err := c.Store().Open(ctx, "/p/a/x")
	if err != nil {
		t.Fatalf("Open inside a read grant: %v", err)
	}
	content.Close()
	for _, p := range []string{"/p/b/y", "/p/a/secret/k", "/p"} {
		if _, err := c.Store().Stat(ctx, p); !errors.Is(err, policy.ErrDenied) {
			t.Errorf("Stat(%s) = %v, want a denial", p, err)
		}
		if _, err := c.Store().Open(ctx, p); !errors.Is(err, policy.ErrDenied) {
			t.Errorf("Open(%s) = %v, want a denial", p, err)
		}
	}
	entries, err := c.Store().ReadDir(ctx, "/p/a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Path)
	}
	if strings.Join(names, " ") != "/p/a/x" {
		t.Errorf("ReadDir(/p/a) = %q; the denied /p/a/secret must not appear", names)
	}
	if _, err := c.Store().ReadDir(ctx, "/p"); !errors.Is(err, policy.ErrDenied) {
		t.Errorf("ReadDir(/p) = %v, want a denial", err)
	}
}
