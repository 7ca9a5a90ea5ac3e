package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
)

func grants(t *testing.T, specs ...string) []grant.Grant {
	t.Helper()
	out := make([]grant.Grant, len(specs))
	for i, s := range specs {
		g, err := grant.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = g
	}
	return out
}

func host(t *testing.T, allow, deny []string) *policy.Host {
	t.Helper()
	h, err := policy.NewHost(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheck is the table of policy decisions: grants against host policy,
// whole-component prefixes, tool and group grants, access levels.
func TestCheck(t *testing.T) {
	const tool, group = "guide_cache_file", "guide"
	tests := []struct {
		name        string
		allow, deny []string
		full        bool
		grants      []string
		path        string
		access      grant.Access
		want        bool
		rule        string // a substring of the denial's rule
	}{
		{name: "group grant allows below its prefix", grants: []string{"guide:/projects/a:rw"}, path: "/projects/a/x.txt", access: grant.Write, want: true},
		{name: "prefix itself", grants: []string{"guide:/projects/a:rw"}, path: "/projects/a", access: grant.Write, want: true},
		{name: "component boundary", grants: []string{"guide:/projects/a:rw"}, path: "/projects/abc", access: grant.Write,
			rule: "no grant allows write to /projects/abc via guide_cache_file; grants: guide:/projects/a:rw"},
		{name: "component boundary below", grants: []string{"guide:/projects/a:rw"}, path: "/projects/abc/x", access: grant.Write, rule: "no grant allows"},
		{name: "parent of prefix", grants: []string{"guide:/projects/a:rw"}, path: "/projects", access: grant.Write, rule: "no grant allows"},
		{name: "read-only grant cannot write", grants: []string{"guide:/projects/a:r"}, path: "/projects/a/x", access: grant.Write, rule: "no grant allows write"},
		{name: "write-only grant cannot read", grants: []string{"guide:/projects/a:w"}, path: "/projects/a/x", access: grant.Read, rule: "no grant allows read"},
		{name: "read and write needs both", grants: []string{"guide:/a:r", "guide:/a:w"}, path: "/a/x", access: grant.ReadWrite, rule: "no grant allows read and write"},
		{name: "tool grant", grants: []string{"guide_cache_file:/a:w"}, path: "/a/x", access: grant.Write, want: true},
		{name: "other tool's grant", grants: []string{"guide_read_file:/a:w"}, path: "/a/x", access: grant.Write, rule: "via guide_cache_file"},
		{name: "other group's grant", grants: []string{"provider:/a:rw"}, path: "/a/x", access: grant.Write, rule: "grants: provider:/a:rw"},
		{name: "any tool grant", grants: []string{"*:/:rw"}, path: "/a/x", access: grant.Write, want: true},
		{name: "no grants", path: "/a", access: grant.Write, rule: "grants: none"},
		{name: "full", full: true, path: "/anything/at/all", access: grant.ReadWrite, want: true},
		{name: "full bounded by allow", full: true, allow: []string{"/projects"}, path: "/etc/x", access: grant.Write,
			rule: "does not allow /etc/x (allowed prefixes: /projects)"},
		{name: "full bounded by deny", full: true, deny: []string{"/secret"}, path: "/secret/k", access: grant.Read, rule: "denies /secret/k (denied prefix /secret)"},
		{name: "grant beyond allow", grants: []string{"guide:/:rw"}, allow: []string{"/projects"}, path: "/uploads/x", access: grant.Write, rule: "does not allow"},
		{name: "grant within allow", grants: []string{"guide:/:rw"}, allow: []string{"/projects"}, path: "/projects/x", access: grant.Write, want: true},
		{name: "allow boundary", grants: []string{"guide:/:rw"}, allow: []string{"/projects/a"}, path: "/projects/ab", access: grant.Write, rule: "does not allow"},
		{name: "deny boundary", grants: []string{"guide:/:rw"}, deny: []string{"/projects/a"}, path: "/projects/ab", access: grant.Write, want: true},
		{name: "deny inside allow and grant", grants: []string{"guide:/projects:rw"}, allow: []string{"/projects"}, deny: []string{"/projects/secret"}, path: "/projects/secret/x", access: grant.Write, rule: "denied prefix /projects/secret"},
		{name: "deny wins over grant on exact path", grants: []string{"guide:/p:rw"}, deny: []string{"/p"}, path: "/p", access: grant.Write, rule: "denies /p"},
		{name: "several allows", grants: []string{"*:/:rw"}, allow: []string{"/a", "/b"}, path: "/b/c", access: grant.Write, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := identity.Identity{Transport: "test", Subject: "agent", Full: tt.full, Grants: grants(t, tt.grants...)}
			set := host(t, tt.allow, tt.deny).For(id)
			g, err := set.Check(tool, group, tt.path, tt.access)
			if tt.want {
				if err != nil {
					t.Fatalf("denied: %v", err)
				}
				if g.Access&tt.access != tt.access {
					t.Errorf("allowed by %v, which lacks %v", g, tt.access)
				}
				return
			}
			var d *policy.Denied
			if !errors.As(err, &d) || !errors.Is(err, policy.ErrDenied) {
				t.Fatalf("Check = %v, %v; want a *Denied", g, err)
			}
			if !strings.Contains(d.Rule, tt.rule) || d.Path != tt.path || d.Tool != tool || d.Access != tt.access {
				t.Errorf("denial %+v; want rule containing %q", d, tt.rule)
			}
		})
	}
}

// TestCoversTool decides tool visibility: a grant must name the tool, its
// group or every tool, and reach a path the host allows and does not deny.
func TestCoversTool(t *testing.T) {
	tests := []struct {
		name        string
		allow, deny []string
		full        bool
		grants      []string
		tool, group string
		want        bool
	}{
		{name: "group", grants: []string{"guide:/a:r"}, tool: "guide_cache_file", group: "guide", want: true},
		{name: "tool", grants: []string{"guide_read_file:/a:w"}, tool: "guide_read_file", group: "guide", want: true},
		{name: "another tool", grants: []string{"guide_read_file:/a:w"}, tool: "guide_cache_file", group: "guide"},
		{name: "another group", grants: []string{"provider:/a:rw"}, tool: "guide_cache_file", group: "guide"},
		{name: "any tool", grants: []string{"*:/a:rw"}, tool: "read_file", group: "provider", want: true},
		{name: "no grants", tool: "guide_cache_file", group: "guide"},
		{name: "full", full: true, tool: "anything", group: "fs", want: true},
		{name: "grant outside allow", grants: []string{"guide:/etc:rw"}, allow: []string{"/projects"}, tool: "guide_cache_file", group: "guide"},
		{name: "grant above allow", grants: []string{"guide:/:rw"}, allow: []string{"/projects"}, tool: "guide_cache_file", group: "guide", want: true},
		{name: "grant wholly denied", grants: []string{"guide:/secret/a:rw"}, deny: []string{"/secret"}, tool: "guide_cache_file", group: "guide"},
		{name: "grant partly denied", grants: []string{"guide:/p:rw"}, deny: []string{"/p/secret"}, tool: "guide_cache_file", group: "guide", want: true},
		{name: "allowed part denied", grants: []string{"guide:/:rw"}, allow: []string{"/p"}, deny: []string{"/p"}, tool: "guide_cache_file", group: "guide"},
		{name: "full but everything denied", full: true, deny: []string{"/"}, tool: "guide_cache_file", group: "guide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := identity.Identity{Full: tt.full, Grants: grants(t, tt.grants...)}
			set := host(t, tt.allow, tt.deny).For(id)
			if got := set.CoversTool(tt.tool, tt.group); got != tt.want {
				t.Errorf("CoversTool(%s, %s) = %v, want %v", tt.tool, tt.group, got, tt.want)
			}
			err := set.CheckTool(tt.tool, tt.group)
			if tt.want != (err == nil) || err != nil && (!errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), "no grant covers tool "+tt.tool)) {
				t.Errorf("CheckTool(%s, %s) = %v", tt.tool, tt.group, err)
			}
		})
	}
}

func TestAnyTool(t *testing.T) {
	h := host(t, []string{"/p"}, []string{"/p/secret"})
	set := h.For(identity.Identity{Grants: grants(t, "guide:/p/a:r", "provider:/p/b:rw")})
	tests := []struct {
		path   string
		access grant.Access
		want   bool
	}{
		{"/p/a/x", grant.Read, true},
		{"/p/a/x", grant.Write, false},
		{"/p/b/x", grant.Write, true},
		{"/p/bc", grant.Write, false},
		{"/q", grant.Read, false},
	}
	for _, tt := range tests {
		if got := set.AnyTool(tt.path, tt.access); got != tt.want {
			t.Errorf("AnyTool(%s, %v) = %v, want %v", tt.path, tt.access, got, tt.want)
		}
	}
	if h.For(identity.Identity{Full: true}).AnyTool("/p/secret/k", grant.Read) {
		t.Errorf("a denied prefix is writable with full grants")
	}
}

func TestReaches(t *testing.T) {
	h := host(t, []string{"/"}, []string{"/p/secret"})
	set := h.For(identity.Identity{Grants: grants(t, "guide:/p/a:r", "*:/p/secret/inner:r", "provider:/q/w:w")})
	tests := []struct {
		path string
		want bool
	}{
		{"/", true},          // leads to /p/a
		{"/p", true},         // leads to /p/a
		{"/p/a", true},       // granted
		{"/p/a/x/y", true},   // below a grant
		{"/p/ab", false},     // a sibling whose name only starts alike
		{"/p/b", false},      // another directory
		{"/p/secret", false}, // the grant below it is denied by the host
		{"/q", false},        // leads only to a write grant
		{"/r", false},        // nothing
	}
	for _, tt := range tests {
		if got := set.Reaches(tt.path, grant.Read); got != tt.want {
			t.Errorf("Reaches(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if !h.For(identity.Identity{Full: true}).Reaches("/anything", grant.Read) {
		t.Errorf("full grants do not reach /anything")
	}
}

func TestNewHost(t *testing.T) {
	h := host(t, nil, nil)
	if got := h.Allow(); len(got) != 1 || got[0] != "/" {
		t.Errorf("default allow %q, want [/]", got)
	}
	h = host(t, []string{"/a//b/", `/c\d`}, []string{"/x/./y"})
	if got := strings.Join(h.Allow(), " "); got != "/a/b /c/d" {
		t.Errorf("allow cleaned to %q", got)
	}
	if got := strings.Join(h.Deny(), " "); got != "/x/y" {
		t.Errorf("deny cleaned to %q", got)
	}
	for _, bad := range [][2][]string{{{"relative"}, nil}, {nil, {"/.."}}, {{"/a\x00"}, nil}, {nil, {""}}} {
		if _, err := policy.NewHost(bad[0], bad[1]); !errors.Is(err, policy.ErrPrefix) {
			t.Errorf("NewHost(%q, %q) = %v, want ErrPrefix", bad[0], bad[1], err)
		}
	}
}

func TestSetString(t *testing.T) {
	h := host(t, nil, nil)
	for _, tt := range []struct {
		id   identity.Identity
		want string
	}{
		{identity.Identity{Full: true}, "all (full grants)"},
		{identity.Identity{}, "none"},
		{identity.Identity{Grants: grants(t, "guide:/a:rw", "*:/:r")}, "guide:/a:rw, *:/:r"},
	} {
		if got := h.For(tt.id).String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}
