package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// wireTool is a tool definition as tools/list sends it.
type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Annotations  struct {
		ReadOnlyHint    *bool `json:"readOnlyHint"`
		DestructiveHint *bool `json:"destructiveHint"`
		IdempotentHint  *bool `json:"idempotentHint"`
	} `json:"annotations"`
}

// inputSchema is the part of an input schema the tests look at.
type inputSchema struct {
	Type                 string                     `json:"type"`
	Properties           map[string]json.RawMessage `json:"properties"`
	Required             []string                   `json:"required"`
	AdditionalProperties *bool                      `json:"additionalProperties"`
}

func listTools(t *testing.T, h *harness) map[string]wireTool {
	t.Helper()
	res, err := h.client.ListTools(h.ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools: %v", err)
	}
	raw, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	var tools []wireTool
	if err := json.Unmarshal(raw, &tools); err != nil {
		t.Fatal(err)
	}
	out := map[string]wireTool{}
	for _, tool := range tools {
		out[tool.Name] = tool
	}
	return out
}

func TestToolsList(t *testing.T) {
	h := newHarness(t, nil)
	tools := listTools(t, h)
	for name := range tools {
		if !strings.HasPrefix(name, "guide_") {
			delete(tools, name) // other profiles: see profile_test.go
		}
	}
	names := make([]string, 0, len(tools))
	for name := range tools {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"guide_cache_file", "guide_cache_files", "guide_cache_stats", "guide_list_directory", "guide_pending_requests", "guide_read_file"}; !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q", names, want)
	}
	wantRequired := map[string][]string{
		"guide_cache_file":     {"content"},
		"guide_cache_files":    {"files"},
		"guide_list_directory": {"entries", "path"},
		"guide_read_file":      {"content"},
	}
	readOnly := map[string]bool{"guide_cache_stats": true, "guide_pending_requests": true}
	for name, tool := range tools {
		t.Run(name, func(t *testing.T) {
			for _, want := range []string{"Arguments", "Example", "Security", "Errors", "Reply data"} {
				if !strings.Contains(tool.Description, want) && !strings.Contains(tool.Description, strings.ToLower(want)) {
					t.Errorf("description lacks a %q section", want)
				}
			}
			if len(tool.Description) < 1500 || strings.Contains(tool.Description, "{{") {
				t.Errorf("description of %d bytes, or with an unfilled placeholder", len(tool.Description))
			}
			var in inputSchema
			if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
				t.Fatalf("input schema: %v", err)
			}
			compileSchema(t, name+"-input", tool.InputSchema)
			slices.Sort(in.Required)
			if in.Type != "object" || !slices.Equal(in.Required, wantRequired[name]) || in.AdditionalProperties == nil || *in.AdditionalProperties {
				t.Errorf("input schema type %q required %q additionalProperties %v", in.Type, in.Required, in.AdditionalProperties)
			}
			for prop, raw := range in.Properties {
				if !strings.Contains(string(raw), `"type"`) || !strings.Contains(string(raw), `"description"`) {
					t.Errorf("property %s has no type or description: %s", prop, raw)
				}
				if !strings.Contains(tool.Description, prop) {
					t.Errorf("description does not explain argument %s", prop)
				}
			}
			if len(tool.OutputSchema) == 0 {
				t.Error("no output schema")
			}
			a := tool.Annotations
			ro := readOnly[name]
			if a.ReadOnlyHint == nil || *a.ReadOnlyHint != ro || a.DestructiveHint == nil || *a.DestructiveHint == ro || a.IdempotentHint == nil || !*a.IdempotentHint {
				t.Errorf("annotations readOnly %v destructive %v idempotent %v; want read-only %v", *a.ReadOnlyHint, *a.DestructiveHint, *a.IdempotentHint, ro)
			}
		})
	}
}

// TestSchemasMatchDecoders checks that every argument an input schema
// declares is accepted by the tool's decoder, and that one it does not
// declare is refused: the published schema and the code agree.
func TestSchemasMatchDecoders(t *testing.T) {
	h := newHarness(t, nil)
	for name, tool := range listTools(t, h) {
		if !strings.HasPrefix(name, "guide_") {
			continue // other profiles reply in their own shapes: see profile_test.go
		}
		var in inputSchema
		if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		args := map[string]any{}
		for prop := range in.Properties {
			args[prop] = []any{} // a wrong type for every argument: nothing is stored
		}
		if len(args) > 0 {
			env := h.fail(name, args, "validation")
			if strings.Contains(env.Error.Message, "unknown argument") {
				t.Errorf("%s: a schema argument is unknown to the decoder: %s", name, env.Error.Message)
			}
		}
		args["not_in_schema"] = 1
		env := h.fail(name, args, "validation")
		if !strings.Contains(env.Error.Message, `unknown argument(s) "not_in_schema"`) {
			t.Errorf("%s: an argument outside the schema was not refused: %s", name, env.Error.Message)
		}
		if len(in.Properties) == 0 {
			if !strings.Contains(env.Error.Message, "takes no arguments") {
				t.Errorf("%s: takes no arguments, but the refusal says %q", name, env.Error.Message)
			}
			continue
		}
		accepted := env.Error.Message[strings.Index(env.Error.Message, "accepted: ")+len("accepted: "):]
		accepted, _, _ = strings.Cut(accepted, ";")
		got := strings.Split(accepted, ", ")
		want := make([]string, 0, len(in.Properties))
		for prop := range in.Properties {
			want = append(want, prop)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: decoder accepts %q, schema declares %q", name, got, want)
		}
	}
}
