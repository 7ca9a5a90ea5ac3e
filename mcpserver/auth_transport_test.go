package mcpserver_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestHTTPIdentityFromMiddleware shows that the HTTP handler keeps the
// identity an authenticating middleware put in the request's context
// instead of replacing it with the remote address.
func TestHTTPIdentityFromMiddleware(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := mcpserver.New(st, &mcpserver.Options{Settings: mcpserver.Settings{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	agent := identity.Identity{Transport: "http", Subject: "depotfs://example.org/agent/builder", Method: identity.MethodCert,
		Serial: "2a", Grants: []grant.Grant{{Tool: grant.AnyTool, Prefix: "/", Access: grant.ReadWrite}}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.Handler().ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), agent)))
	}))
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	startClient(t, c)
	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_cache_file"
	req.Params.Arguments = map[string]any{"path": "/who", "content": "x"}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	e, err := st.Stat(context.Background(), "/who")
	if err != nil || e.Writer != agent.String() {
		t.Errorf("writer %q (%v), want %q", e.Writer, err, agent.String())
	}
}
