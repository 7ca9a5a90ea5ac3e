package mcpserver

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/grant"
	"github.com/depotfs/depotfs/mcpserver/identity"
	"github.com/depotfs/depotfs/mcpserver/policy"
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
// caller may write a path: inside a call through that call's tool, outside
// through any tool, both bounded by the server's policy.
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
	inCall := withCall(ctx, &call{def: guideTool(toolCacheFile), perms: host.For(agent)})
	tests := []struct {
		path          string
		inCall, outer bool
	}{
		{"/projects/a/x", true, true},
		{"projects//a/./x", true, true},
		{"/projects/abc", false, false},
		{"/projects/b/x", false, true}, // another tool's grant
		{"/projects/r/x", false, false},
		{"/projects/a/secret/k", false, false},
		{"/../x", false, false},
	}
	for _, tt := range tests {
		if got := s.mayWrite(inCall, tt.path); got != tt.inCall {
			t.Errorf("mayWrite(in a guide call, %q) = %v, want %v", tt.path, got, tt.inCall)
		}
		if got := s.mayWrite(ctx, tt.path); got != tt.outer {
			t.Errorf("mayWrite(%q) = %v, want %v", tt.path, got, tt.outer)
		}
	}
	if s.mayWrite(context.Background(), "/x") {
		t.Errorf("a caller without identity may write")
	}
}
