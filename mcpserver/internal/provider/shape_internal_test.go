package provider

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// TestLinkedReadStructured: a read answered with a resource link (over
// HTTP, a file above Settings.LinkMinBytes, which the unit harness cannot
// produce) has, with output schemas, structured content naming the link,
// the size and the hash, valid against the tool's output schema; its text
// and link block are those of the reply without it.
func TestLinkedReadStructured(t *testing.T) {
	env := &tool.Env{Settings: tool.Settings{OutputSchemas: true, MaxReadBytes: 1 << 20, MaxListEntries: 10}}
	d := tool.NewDocs(docs, "doc", "result", map[string]string{"error": "error.json"}, env)
	link := mcp.ResourceLink{Type: "resource_link", URI: "http://127.0.0.1/files/x", Name: "data.bin"}
	for _, c := range []struct{ name, field string }{{"read_file", "content"}, {"read_file_binary", "base64"}} {
		on := providerShape{structured: true, field: c.field}
		res, err := on.Success(&tool.Call{Size: 9 << 20, SHA256: "ab12"}, tool.Reply{Data: "too large", Links: []mcp.ResourceLink{link}})
		if err != nil {
			t.Fatal(err)
		}
		off, _ := providerShape{field: c.field}.Success(&tool.Call{}, tool.Reply{Data: "too large", Links: []mcp.ResourceLink{link}})
		if len(res.Content) != 2 || len(off.Content) != 2 || off.StructuredContent != nil {
			t.Fatalf("%s: content %+v with output schemas, %+v (structured %v) without", c.name, res.Content, off.Content, off.StructuredContent)
		}
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil || string(raw) != `{"link":"http://127.0.0.1/files/x","sha256":"ab12","size":9437184}` {
			t.Fatalf("%s: structured content %s (%v)", c.name, raw, err)
		}
		schema, ok := d.OutputSchema(c.name)
		if !ok {
			t.Fatalf("%s: no output schema", c.name)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
		if err != nil {
			t.Fatal(err)
		}
		comp := jsonschema.NewCompiler()
		if err := comp.AddResource("mem:///"+c.name+".json", doc); err != nil {
			t.Fatal(err)
		}
		sch, err := comp.Compile("mem:///" + c.name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
