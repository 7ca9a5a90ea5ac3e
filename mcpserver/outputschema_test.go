package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// TestOutputSchemasDeclared: with Settings.OutputSchemas, tools/list
// declares the output schema of every tool whose results are structured,
// the very schema the tests validate its replies against and docs/tools.md
// shows, and the server checks each structured result against it: calls
// of every shape still succeed. The provider tools whose contract returns
// a bare value (text, a list, a boolean) declare none, since an MCP output
// schema describes an object. It logs what the schemas cost in tools/list.
func TestOutputSchemasDeclared(t *testing.T) {
	t.Parallel()
	h := newHarness(t, &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount, OutputSchemas: true}})
	want := mcpserver.OutputSchemas(h.srv)
	// The reply as sent: a client's decoding into mcp.Tool keeps only
	// part of a schema.
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	raw := h.srv.MCP().HandleMessage(h.ctx, json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &list) != nil || len(list.Result.Tools) == 0 {
		t.Fatalf("tools/list: %v", err)
	}
	tools := map[string]json.RawMessage{}
	for _, tool := range list.Result.Tools {
		tools[tool.Name] = tool.OutputSchema
	}
	values := map[string]bool{"read_file": true, "read_file_binary": true, "list_directory": true, "file_exists": true, "calculate_file_hash": true, "find_files": true}
	for name, declared := range tools {
		schema, ok := want[name]
		switch {
		case !ok && !values[name]:
			t.Errorf("%s has no output schema", name)
		case !ok:
			if len(declared) > 0 {
				t.Errorf("%s returns a bare value but declares an output schema", name)
			}
		default:
			var a, b bytes.Buffer
			if err := json.Compact(&a, schema); err != nil {
				t.Fatal(err)
			}
			if err := json.Compact(&b, declared); err != nil || a.String() != b.String() {
				t.Errorf("%s declares the output schema %.200s, want %.200s (%v)", name, b.String(), a.String(), err)
			}
		}
	}
	with := len(toolsListReply(t, &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount, OutputSchemas: true}}))
	without := len(toolsListReply(t, &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount}}))
	t.Logf("tools/list of every profile: %d bytes with the output schemas, %d without", with, without)

	// The server validates each structured result before sending it: a
	// result off its schema would come back as an error.
	h.ok("guide_cache_file", m{"path": "/o/a.txt", "content": "alpha"}, nil)
	h.ok("guide_cache_stats", m{}, nil)
	h.ok("guide_file_history", m{"path": "/o/a.txt"}, nil)
	for _, c := range []struct {
		tool string
		args m
	}{
		{"get_file_stats", m{"path": "/o/a.txt"}},
		{"read", m{"path": "o/a.txt"}},
		{"list", m{"path": "o"}},
		{"info", m{"path": "o/a.txt"}},
	} {
		if r := h.callRaw(c.tool, c.args); r.isError || len(r.structured) == 0 {
			t.Errorf("%s %v: %s (isError %v, %d bytes structured)", c.tool, c.args, r.text, r.isError, len(r.structured))
		}
	}
}
