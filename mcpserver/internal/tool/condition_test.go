package tool_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

func TestConditionSchema(t *testing.T) {
	for _, c := range []struct {
		name, schema string
		within       []string
		want         string // the properties object after the change, whitespace removed
	}{
		{"top level", `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`, nil,
			`{"path":{"type":"string"},"if_absent":`},
		{"empty properties", `{"type":"object","properties":{ }}`, nil,
			`{"if_absent":`},
		{"array entries", `{"type":"object","properties":{"files":{"type":"array","items":{"type":"object","properties":{"b":{},"a":{}}}}}}`,
			[]string{"properties", "files", "items"}, `{"b":{},"a":{},"if_absent":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := tool.ConditionSchema(mcp.Tool{Name: "x", RawInputSchema: json.RawMessage(c.schema)}, c.within...)
			got := strings.Join(strings.Fields(string(spec.RawInputSchema)), "")
			if !json.Valid(spec.RawInputSchema) || !strings.Contains(got, c.want) || !strings.Contains(got, `"if_revision":{`) {
				t.Errorf("schema %s, want properties starting %s and if_revision", got, c.want)
			}
		})
	}
	defer func() {
		if recover() == nil {
			t.Error("a schema without the named object did not panic")
		}
	}()
	tool.ConditionSchema(mcp.Tool{Name: "x", RawInputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}, "properties", "files")
}
