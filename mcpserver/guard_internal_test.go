package mcpserver

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestStoreOnlyThroughGuard makes forgetting a permission check
// impossible: outside guard.go, no code of this package may touch the
// store (Server.st) directly. A tool reaches the store only through
// call.store, which checks the caller's grants on every path first.
func TestStoreOnlyThroughGuard(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || name == "guard.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "st" {
				t.Errorf("%s: direct use of the store (.st): tool code must use the call's guarded store, c.store, so the caller's grants are checked (see guard.go)", fset.Position(sel.Pos()))
			}
			return true
		})
	}
}

func TestArgName(t *testing.T) {
	for field, want := range map[string]string{
		"path":                         "path",
		"entries[2].name":              "name",
		"entries[2].entries[10].name":  "name",
		"arguments":                    "arguments",
		"entries[0].entries[0].source": "source",
	} {
		if got := argName(field); got != want {
			t.Errorf("argName(%q) = %q, want %q", field, got, want)
		}
	}
}

// TestMayWrite checks the hook other code consults to ask whether the
// caller may write a path: through any of its tools, bounded by the
// server's policy, inside a call or not.
func TestMayWrite(t *testing.T) {
	host, err := policy.NewHost(nil, []string{"/projects/a/secret"})
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{opts: Options{Policy: host}}
	agent := identity.Identity{Transport: "test", Subject: "agent", Grants: []grant.Grant{
		{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite},
		{Tool: "provider", Prefix: "/projects/b", Access: grant.Write},
		{Tool: "guide", Prefix: "/projects/r", Access: grant.Read},
	}}
	ctx := identity.NewContext(context.Background(), agent)
	tests := []struct {
		path string
		want bool
	}{
		{"/projects/a/x", true},
		{"projects//a/./x", true},
		{"/projects/abc", false},
		{"/projects/b/x", true}, // another tool's grant
		{"/projects/r/x", false},
		{"/projects/a/secret/k", false},
		{"/../x", false},
	}
	for _, tt := range tests {
		if got := s.mayWrite(ctx, tt.path); got != tt.want {
			t.Errorf("mayWrite(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if s.mayWrite(context.Background(), "/x") {
		t.Errorf("a caller without identity may write")
	}
}

// TestGuardReads checks the guarded read operations a read-only tool uses:
// each needs read access to its path, and a listing leaves out children
// below a denied prefix.
func TestGuardReads(t *testing.T) {
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
	s := New(st, &Options{Policy: host})
	reader := identity.Identity{Transport: "test", Subject: "reader", Grants: []grant.Grant{
		{Tool: "provider", Prefix: "/p/a", Access: grant.Read},
		{Tool: "provider", Prefix: "/p/b", Access: grant.Write},
	}}
	c := s.newCall(identity.NewContext(ctx, reader), toolDef{name: "read_file", group: "provider"})

	if e, err := c.store.Stat(ctx, "/p/a/x"); err != nil || e.Path != "/p/a/x" {
		t.Errorf("Stat inside a read grant: %v %v", e, err)
	}
	content, err := c.store.Open(ctx, "/p/a/x")
	if err != nil {
		t.Fatalf("Open inside a read grant: %v", err)
	}
	content.Close()
	for _, p := range []string{"/p/b/y", "/p/a/secret/k", "/p"} {
		if _, err := c.store.Stat(ctx, p); !errors.Is(err, policy.ErrDenied) {
			t.Errorf("Stat(%s) = %v, want a denial", p, err)
		}
		if _, err := c.store.Open(ctx, p); !errors.Is(err, policy.ErrDenied) {
			t.Errorf("Open(%s) = %v, want a denial", p, err)
		}
	}
	entries, err := c.store.ReadDir(ctx, "/p/a")
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
	if _, err := c.store.ReadDir(ctx, "/p"); !errors.Is(err, policy.ErrDenied) {
		t.Errorf("ReadDir(/p) = %v, want a denial", err)
	}
}
