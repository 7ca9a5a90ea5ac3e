package mcpserver_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// FuzzSessionsCounted posts arbitrary bodies, with or without a session
// id, to the HTTP transport: the sessions the server counts are exactly
// those whose id a client was given (an answer with Mcp-Session-Id),
// however the initialize is spelled (one sent as a notification makes a
// session nobody learns of, ended at once), and no reservation is left
// over once the request is done.
func FuzzSessionsCounted(f *testing.F) {
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`
	for _, s := range []string{
		init,
		strings.Replace(init, `"initialize"`, `"\u0069nitialize"`, 1),
		strings.Replace(init, `"method":`, `"method" :`, 1),
		strings.Replace(init, `"method"`, `"METHOD"`, 1),
		strings.Replace(init, `"method":"initialize"`, `"method":"ping","method":"initialize"`, 1),
		strings.Replace(init, `"method":"initialize"`, `"method":"initialize","method":"ping"`, 1),
		`{"jsonrpc":"2.0","id":0,"params":{"clientInfo":{"name":"` + strings.Repeat("x", 600) + `"}},"method":"initialize"}`,
		`[` + init + `]`,
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		strings.Replace(init, `"id":0,`, ``, 1), // a notification
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		f.Add(s, false)
	}
	h := newHarness(f, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount},
		HTTP: mcpserver.HTTPLimits{MaxSessions: 1 << 30, MaxSessionsPerIdentity: 1 << 30}})
	handler := h.srv.Handler()
	created := map[string]bool{}
	f.Fuzz(func(t *testing.T, body string, withSession bool) {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if withSession {
			req.Header.Set("Mcp-Session-Id", "depotfs-session-0")
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if id := rec.Header().Get("Mcp-Session-Id"); id != "" {
			created[id] = true
		}
		if live := h.srv.LiveSessions(); live != len(created) {
			t.Fatalf("%d sessions live, %d started (body %.200q)", live, len(created), body)
		}
		if n := mcpserver.PendingSessions(h.srv); n != 0 {
			t.Fatalf("%d session reservations left after the request (body %.200q)", n, body)
		}
	})
}
