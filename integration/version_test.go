package integration_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

var revisionRE = regexp.MustCompile(`(?m)^revision ([0-9a-f]{40}) `)

// TestVersion: "depotfs version" and "depotfs --version" print the version
// MCP clients see as serverInfo.version, never the placeholder "dev".
func TestVersion(t *testing.T) {
	t.Parallel()
	out := depotfsCommand(t, "version")
	first, _, _ := strings.Cut(out, "\n")
	v, ok := strings.CutPrefix(first, "depotfs ")
	if !ok || v == "" || v == "dev" {
		t.Fatalf("depotfs version printed %q", out)
	}
	if !strings.Contains(out, "revision ") || !strings.Contains(out, "go1.") {
		t.Errorf("depotfs version does not name the revision and the toolchain:\n%s", out)
	}
	if m := revisionRE.FindStringSubmatch(out); m != nil && !strings.Contains(v, m[1][:12]) {
		t.Errorf("version %q does not name revision %s", v, m[1])
	}
	if flag := depotfsCommand(t, "--version"); flag != out {
		t.Errorf("--version printed %q, version %q", flag, out)
	}

	d := startDaemon(t, daemonConfig{transport: overHTTP, noInit: true})
	c := d.newClient(clientAuth{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "version-test", Version: "1"}
	res, err := c.mcp.Initialize(ctx, init)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	if res.ServerInfo.Name != "depotfs" || res.ServerInfo.Version != v {
		t.Errorf("serverInfo %+v, want depotfs %s", res.ServerInfo, v)
	}
}
