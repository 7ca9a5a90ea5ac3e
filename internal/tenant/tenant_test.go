package tenant_test

import (
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/tenant"
)

func TestOf(t *testing.T) {
	g := func(tool, prefix string, a grant.Access) grant.Grant {
		return grant.Grant{Tool: tool, Prefix: prefix, Access: a}
	}
	tok := func(name string, gs ...grant.Grant) identity.Identity {
		return identity.Identity{Transport: "http", Subject: "depotfs://local/token/" + name, Method: identity.MethodToken, Grants: gs}
	}
	named := tok("n", g("*", "/a", grant.ReadWrite))
	named.Tenant = "acme"
	tests := []struct {
		name string
		id   identity.Identity
		want string
	}{
		{"stdio", identity.Stdio(), tenant.Local},
		{"unauthenticated http", identity.Identity{Transport: "http", Subject: "127.0.0.1", Full: true}, tenant.Local},
		{"unknown", identity.Unknown, tenant.Local},
		{"full cert", identity.Identity{Transport: "http", Subject: "depotfs://x/agent/op", Method: identity.MethodCert, Full: true}, tenant.Operator},
		{"token granting everything", tok("op", g("*", "/", grant.ReadWrite)), tenant.Operator},
		{"token reading everything", tok("r", g("*", "/", grant.Read)), "grants:/"},
		{"one grant", tok("a1", g("*", "/a", grant.ReadWrite)), "grants:/a"},
		{"grants sorted, repeats dropped", tok("a2", g("guide", "/b", grant.Read), g("*", "/a", grant.ReadWrite), g("fs", "/b", grant.Write)), "grants:/a,/b"},
		{"no grants", tok("none"), "grants:"},
		{"named", named, "tenant:acme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tenant.Of(tt.id); got != tt.want {
				t.Errorf("Of = %q, want %q", got, tt.want)
			}
		})
	}
	if a, b := tenant.Of(tok("x", g("*", "/a", grant.ReadWrite))), tenant.Of(tok("y", g("guide", "/a", grant.Read))); a != b {
		t.Errorf("two tokens with the grant prefix /a are tenants %q and %q; want one", a, b)
	}
}
