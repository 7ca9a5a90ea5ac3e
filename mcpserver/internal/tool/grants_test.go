package tool

import (
	"log/slog"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/store"
)

// newTestRuntime returns a Runtime over st (nil for none) within the
// server policy host, without audit log or rate limits.
func newTestRuntime(st store.Store, host *policy.Host) *Runtime {
	return NewRuntime(st, &Env{Settings: Settings{Logger: slog.Default(), Now: time.Now}}, host, nil, ratelimit.Limits{Calls: -1, Bytes: -1, CallBurst: 1, ByteBurst: 1})
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
// server's policy.
func TestMayWrite(t *testing.T) {
	host, err := policy.NewHost(nil, []string{"/projects/a/secret"})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestRuntime(nil, host)
	agent := identity.Identity{Transport: "test", Subject: "agent", Grants: []grant.Grant{
		{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite},
		{Tool: "provider", Prefix: "/projects/b", Access: grant.Write},
		{Tool: "guide", Prefix: "/projects/r", Access: grant.Read},
	}}
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
		if got := s.MayWrite(agent, tt.path); got != tt.want {
			t.Errorf("MayWrite(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
	if s.MayWrite(identity.Identity{}, "/x") {
		t.Errorf("a caller without identity may write")
	}
}
