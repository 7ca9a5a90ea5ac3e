package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// TestOutputSchemasDeclared: with Settings.OutputSchemas, tools/list
// declares the output schema of every tool, the very schema the tests
// validate its replies against and docs/tools.md shows, and the server
// checks each structured result against it: calls of every shape still
// succeed. A provider tool whose contract returns a bare value (text, a
// list, a boolean, a digest) then also sends it as structured content,
// an object holding the value, as a declared schema obliges it to; its
// text stays the contract's, as without the setting, where it sends no
// structured content. It logs what the schemas cost in tools/list.
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
	for name, declared := range tools {
		schema, ok := want[name]
		if !ok {
			t.Errorf("%s has no output schema", name)
			continue
		}
		var a, b bytes.Buffer
		if err := json.Compact(&a, schema); err != nil {
			t.Fatal(err)
		}
		if err := json.Compact(&b, declared); err != nil || a.String() != b.String() {
			t.Errorf("%s declares the output schema %.200s, want %.200s (%v)", name, b.String(), a.String(), err)
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

	// The provider tools that reply with a bare value: the same text with
	// the setting and without, structured content (checked against the
	// schema by callRaw) only with it.
	plain := newHarness(t, &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount}})
	for _, x := range []*harness{h, plain} {
		x.seed("/o/b.txt", []byte("beta"))
	}
	for _, c := range []struct {
		tool string
		args m
		want string // the structured content
	}{
		{"read_file", m{"file_path": "/o/b.txt"}, `{"content":"beta"}`},
		{"read_file_binary", m{"file_path": "/o/b.txt"}, `{"base64":"YmV0YQ=="}`},
		{"list_directory", m{"directory_path": testMount + "/o", "pattern": "b*"}, `{"paths":["` + testMount + `/o/b.txt"]}`},
		{"find_files", m{"directory_path": "/o", "patterns": []string{"b.*"}}, `{"paths":["/o/b.txt"]}`},
		{"file_exists", m{"path": "/o/b.txt"}, `{"exists":true}`},
		{"file_exists", m{"path": "/../etc/passwd"}, `{"exists":false}`},
		{"calculate_file_hash", m{"file_path": "/o/b.txt", "algorithm": "md5"}, `{"digest":"987bcab01b929eb2c07877b224215c92"}`},
	} {
		on, off := h.callRaw(c.tool, c.args), plain.callRaw(c.tool, c.args)
		if on.isError || on.text != off.text || off.isError || len(off.structured) > 0 {
			t.Errorf("%s %v: text %q with output schemas, %q (structured %s) without", c.tool, c.args, on.text, off.text, off.structured)
		}
		var got bytes.Buffer
		if err := json.Compact(&got, on.structured); err != nil || got.String() != c.want {
			t.Errorf("%s %v: structured content %s, want %s (%v)", c.tool, c.args, on.structured, c.want, err)
		}
	}
	// An error is the contract's object either way.
	on, off := h.callRaw("read_file", m{"file_path": "/o/none"}), plain.callRaw("read_file", m{"file_path": "/o/none"})
	if !on.isError || on.text != off.text || string(on.structured) != string(off.structured) {
		t.Errorf("read_file of a missing file: %s %s with output schemas, %s %s without", on.text, on.structured, off.text, off.structured)
	}
}
