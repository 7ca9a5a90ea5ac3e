// Package layout_test checks the import graph the design relies on, with
// go list -deps: the binary wires the server and the mount; the mount and
// the MCP server meet only through the store, never importing each other;
// no tool package can import a store implementation; the security
// packages cannot be imported from outside the module; the shared leaves
// under internal/ depend on nothing of the domain; the store's packages
// import downwards only (implementation → fetch broker → store interface).
package layout_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/depotfs/depotfs"

// graph returns every package of the module with the packages it imports,
// directly or not (not its tests), from one go list.
func graph(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	if len(g) == 0 {
		t.Fatal("go list found no packages")
	}
	return g
}

// within reports whether pkg is dir or below it.
func within(pkg, dir string) bool {
	return pkg == module+"/"+dir || strings.HasPrefix(pkg, module+"/"+dir+"/")
}

func TestImportGraph(t *testing.T) {
	g := graph(t)
	if !slices.Contains(g[module+"/cmd/depotfs"], module+"/mcpserver") {
		t.Error("cmd/depotfs does not import mcpserver")
	}
	if !slices.Contains(g[module+"/vfs"], module+"/store") {
		t.Error("vfs does not import store")
	}
	for pkg, ds := range g {
		for _, d := range ds {
			if within(pkg, "vfs") && within(d, "mcpserver") {
				t.Errorf("%s imports %s: the mount and the MCP server meet only through the store", pkg, d)
			}
			if within(pkg, "mcpserver") && within(d, "vfs") {
				t.Errorf("%s imports %s: the MCP server must not depend on the mount", pkg, d)
			}
		}
	}
}

// TestToolPackagesNoStoreImplementation: tool bodies get the guarded store
// of their call; no package under mcpserver may even import a store
// implementation (the unguarded store reaches the server from cmd/depotfs,
// as a store.Store).
func TestToolPackagesNoStoreImplementation(t *testing.T) {
	for pkg, ds := range graph(t) {
		if !within(pkg, "mcpserver") {
			continue
		}
		for _, d := range ds {
			if within(d, "store") && d != module+"/store" && d != module+"/store/fetch" {
				t.Errorf("%s imports %s, a store implementation", pkg, d)
			}
		}
	}
}

// TestSecurityPackagesInternal: the security packages live under the
// module's internal/, so no other module can import them, and no package
// of the same name lives elsewhere in the module.
func TestSecurityPackagesInternal(t *testing.T) {
	security := []string{"auth", "auth/ca", "audit", "grant", "identity", "policy", "ratelimit"}
	g := graph(t)
	for _, name := range security {
		if _, ok := g[module+"/internal/"+name]; !ok {
			t.Errorf("internal/%s is missing", name)
		}
		for pkg := range g {
			if strings.HasSuffix(pkg, "/"+name) && !within(pkg, "internal") {
				t.Errorf("%s: a security package outside internal/ can be imported by any module", pkg)
			}
		}
	}
}

// TestSharedLeavesIndependent: the packages under internal/ are shared
// leaves (auth, audit, policy, metrics, ...) that the domain uses, so none
// of them may import the domain: not the store (or a package below it), the
// MCP server, the mount or the binary. A leaf that needs the domain's
// figures declares its own narrow types (as metrics.StoreStats does), and
// code that serves one domain package lives next to it (as
// mcpserver/internal/search does).
func TestSharedLeavesIndependent(t *testing.T) {
	for pkg, ds := range graph(t) {
		if !within(pkg, "internal") {
			continue
		}
		for _, d := range ds {
			for _, domain := range []string{"store", "mcpserver", "vfs", "cmd"} {
				if within(d, domain) {
					t.Errorf("%s imports %s: a shared leaf under internal/ must not depend on %s", pkg, d, domain)
				}
			}
		}
	}
}

// TestStoreLayers: the store interface depends on nothing of the domain;
// the fetch broker is a service over any store.Store, so it imports the
// interface and shared leaves only, never an implementation; an
// implementation may import the broker's package to offer it an Exchange
// (store/nats shares requests between hosts); nothing outside an
// implementation's own packages imports it (the conformance suite and the
// write rules included); nothing under store/ knows the MCP server, the
// mount or the binary.
func TestStoreLayers(t *testing.T) {
	// impl names the store implementation pkg belongs to, or "".
	impl := func(pkg string) string {
		for _, i := range []string{"store/bolt", "store/nats"} {
			if within(pkg, i) {
				return i
			}
		}
		return ""
	}
	for pkg, ds := range graph(t) {
		if !within(pkg, "store") {
			continue
		}
		for _, d := range ds {
			if !strings.HasPrefix(d, module+"/") || within(d, "internal") {
				continue
			}
			switch {
			case pkg == module+"/store":
				t.Errorf("store imports %s: the store interface depends on shared leaves only", d)
			case pkg == module+"/store/fetch" && d != module+"/store":
				t.Errorf("store/fetch imports %s: the broker serves any store through the store interface", d)
			case impl(d) != "" && impl(d) != impl(pkg):
				t.Errorf("%s imports %s: only a store implementation's own packages depend on it", pkg, d)
			case !within(d, "store"):
				t.Errorf("%s imports %s: the store knows nothing of the server, the mount or the binary", pkg, d)
			}
		}
	}
}
