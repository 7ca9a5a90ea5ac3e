package identity_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/identity"
)

func TestContext(t *testing.T) {
	if id, ok := identity.FromContext(context.Background()); ok || id != identity.Unknown {
		t.Errorf("empty context: %v %v, want Unknown false", id, ok)
	}
	want := identity.Identity{Transport: "test", Subject: "bob"}
	id, ok := identity.FromContext(identity.NewContext(context.Background(), want))
	if !ok || id != want || id.String() != "test:bob" {
		t.Errorf("got %v %v (%q)", id, ok, id.String())
	}
}

func TestTransports(t *testing.T) {
	if s := identity.Stdio(); s.Transport != "stdio" || s.Subject == "" || !strings.HasPrefix(s.String(), "stdio:") {
		t.Errorf("Stdio() = %+v", s)
	}
	r := httptest.NewRequest("POST", "/mcp", nil)
	r.RemoteAddr = "192.0.2.7:4242"
	if got := identity.HTTP(r).String(); got != "http:192.0.2.7:4242" {
		t.Errorf("HTTP() = %q", got)
	}
}
