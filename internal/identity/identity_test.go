package identity_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

func TestContext(t *testing.T) {
	if id, ok := identity.FromContext(context.Background()); ok || !id.Equal(identity.Unknown) {
		t.Errorf("empty context: %v %v, want Unknown false", id, ok)
	}
	want := identity.Identity{Transport: "test", Subject: "bob", Grants: []grant.Grant{{Tool: "guide", Prefix: "/a", Access: grant.Read}}}
	id, ok := identity.FromContext(identity.NewContext(context.Background(), want))
	if !ok || !id.Equal(want) || id.String() != "test:bob" {
		t.Errorf("got %v %v (%q)", id, ok, id.String())
	}
}

func TestTransports(t *testing.T) {
	if s := identity.Stdio(); s.Transport != "stdio" || s.Subject == "" || !strings.HasPrefix(s.String(), "stdio:") || !s.Full || s.Authenticated() {
		t.Errorf("Stdio() = %+v", s)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.RemoteAddr = "192.0.2.7:4242"
	if got := identity.HTTP(r); got.String() != "http:192.0.2.7" || got.Remote != r.RemoteAddr || !got.Full || got.Authenticated() {
		t.Errorf("HTTP() = %+v", got)
	}
	if identity.Unknown.Full || len(identity.Unknown.Grants) > 0 {
		t.Errorf("Unknown grants something: %+v", identity.Unknown)
	}
}

func TestEqual(t *testing.T) {
	a := identity.Identity{Transport: "http", Subject: "depotfs://x/agent/a", Method: identity.MethodCert, Serial: "01",
		Grants: []grant.Grant{{Tool: "*", Prefix: "/", Access: grant.ReadWrite}}}
	tests := []struct {
		name string
		b    identity.Identity
		want bool
	}{
		{"same", a, true},
		{"other serial", func() identity.Identity { b := a; b.Serial = "02"; return b }(), false},
		{"other grants", func() identity.Identity {
			b := a
			b.Grants = []grant.Grant{{Tool: "*", Prefix: "/", Access: grant.Read}}
			return b
		}(), false},
		{"full", func() identity.Identity { b := a; b.Full = true; return b }(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.Equal(tt.b); got != tt.want {
				t.Errorf("Equal = %v, want %v", got, tt.want)
			}
		})
	}
}
