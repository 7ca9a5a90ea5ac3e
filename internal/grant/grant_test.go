package grant_test

import (
	"errors"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want grant.Grant
	}{
		{"guide:/projects/a:rw", grant.Grant{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}},
		{"*:/:r", grant.Grant{Tool: "*", Prefix: "/", Access: grant.Read}},
		{"guide_cache_file:/x//y/:w", grant.Grant{Tool: "guide_cache_file", Prefix: "/x/y", Access: grant.Write}},
	}
	for _, tt := range tests {
		got, err := grant.Parse(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
		if again, err := grant.Parse(got.String()); err != nil || again != got {
			t.Errorf("Parse(String()) of %+v = %+v, %v", got, again, err)
		}
	}
	for _, bad := range []string{"", "guide", "guide:/a", ":/a:r", "guide:/a:x", "guide:relative:r", "guide:/../x:r", "guide:/a\x00:r"} {
		if g, err := grant.Parse(bad); !errors.Is(err, grant.ErrSyntax) {
			t.Errorf("Parse(%q) = %+v, %v; want ErrSyntax", bad, g, err)
		}
	}
}

func TestAllows(t *testing.T) {
	g := grant.Grant{Tool: "guide", Prefix: "/projects/a", Access: grant.Write}
	tests := []struct {
		tool, group, path string
		access            grant.Access
		want              bool
	}{
		{"guide_cache_file", "guide", "/projects/a/x", grant.Write, true},
		{"guide_cache_file", "guide", "/projects/a", grant.Write, true},
		{"guide_cache_file", "guide", "/projects/abc", grant.Write, false},
		{"guide_cache_file", "guide", "/projects/a/x", grant.Read, false},
		{"guide_cache_file", "guide", "/projects/a/x", grant.ReadWrite, false},
		{"read_file", "provider", "/projects/a/x", grant.Write, false},
	}
	for _, tt := range tests {
		if got := g.Allows(tt.tool, tt.group, tt.path, tt.access); got != tt.want {
			t.Errorf("%v.Allows(%s, %s, %s, %v) = %v, want %v", g, tt.tool, tt.group, tt.path, tt.access, got, tt.want)
		}
	}
}
