package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
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

// allProfiles is a harness serving every profile.
func allProfiles(t *testing.T) *harness {
	t.Helper()
	// The history serve keeps by default, so the examples show it.
	return startHarness(t, harnessConfig{
		opts:  &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount, KeepVersions: store.DefaultKeepVersions}},
		store: &bolt.Options{KeepVersions: store.DefaultKeepVersions},
	})
}

// toolTable is every tool the server offers, with what the table test
// checks of it: its profile, its annotations and its required arguments.
// A new tool gets a row here.
var toolTable = map[string]struct {
	profile                           mcpserver.Profile
	readOnly, destructive, idempotent bool
	required                          []string
}{
	"guide_cache_file":       {mcpserver.ProfileGuide, false, true, true, []string{"content"}},
	"guide_cache_files":      {mcpserver.ProfileGuide, false, true, true, []string{"files"}},
	"guide_begin_upload":     {mcpserver.ProfileGuide, false, true, true, nil},
	"guide_read_file":        {mcpserver.ProfileGuide, false, true, true, []string{"content"}},
	"guide_list_directory":   {mcpserver.ProfileGuide, false, true, true, []string{"entries", "path"}},
	"guide_pending_requests": {mcpserver.ProfileGuide, true, false, true, nil},
	"guide_changes":          {mcpserver.ProfileGuide, true, false, true, nil},
	"guide_cache_stats":      {mcpserver.ProfileGuide, true, false, true, nil},
	"guide_list_uploads":     {mcpserver.ProfileGuide, true, false, true, nil},
	"guide_drop_uploads":     {mcpserver.ProfileGuide, false, true, true, nil},
	"guide_snapshot":         {mcpserver.ProfileGuide, false, true, false, []string{"action"}},
	"guide_file_history":     {mcpserver.ProfileGuide, true, false, true, []string{"path"}},
	"guide_restore":          {mcpserver.ProfileGuide, false, true, true, []string{"path"}},
	"read_file":              {mcpserver.ProfileProvider, true, false, true, []string{"file_path"}},
	"read_file_binary":       {mcpserver.ProfileProvider, true, false, true, []string{"file_path"}},
	"list_directory":         {mcpserver.ProfileProvider, true, false, true, []string{"directory_path"}},
	"file_exists":            {mcpserver.ProfileProvider, true, false, true, []string{"path"}},
	"get_file_stats":         {mcpserver.ProfileProvider, true, false, true, []string{"path"}},
	"calculate_file_hash":    {mcpserver.ProfileProvider, true, false, true, []string{"file_path"}},
	"find_files":             {mcpserver.ProfileProvider, true, false, true, []string{"directory_path", "patterns"}},
	"list":                   {mcpserver.ProfileFS, true, false, true, []string{"path"}},
	"read":                   {mcpserver.ProfileFS, true, false, true, []string{"path"}},
	"write":                  {mcpserver.ProfileFS, false, true, false, []string{"content", "path"}},
	"mkdir":                  {mcpserver.ProfileFS, false, false, true, []string{"path"}},
	"delete":                 {mcpserver.ProfileFS, false, true, true, []string{"path"}},
	"copy":                   {mcpserver.ProfileFS, false, true, true, []string{"destination", "source"}},
	"move":                   {mcpserver.ProfileFS, false, true, true, []string{"destination", "source"}},
	"info":                   {mcpserver.ProfileFS, true, false, true, []string{"path"}},
	"search":                 {mcpserver.ProfileFS, true, false, true, []string{"pattern", "root_path"}},
}

// pathLike reports whether an argument name says it holds a path.
func pathLike(name string) bool {
	return strings.HasSuffix(name, "path") || name == "source" || name == "destination" || name == "filename"
}

// TestTools is the one table test over the whole tool list: every tool is
// served once, in the table, with its profile and annotations; its
// description is one an LLM can work from; its input schema is strict,
// every argument described, every path argument declared with its access;
// its schema and its decoder agree; and every documented example runs.
func TestTools(t *testing.T) {
	const maxDescription = 1100
	h := allProfiles(t)
	names := mcpserver.ToolNames(h.srv)
	declared := mcpserver.DeclaredTools(h.srv)
	tools := listTools(t, h)
	outputs := mcpserver.OutputSchemas(h.srv)
	refs := mcpserver.References(h.srv)
	for i, name := range names {
		if slices.Contains(names[:i], name) {
			t.Errorf("tool %s is listed twice", name)
		}
		if _, ok := toolTable[name]; !ok {
			t.Errorf("tool %s is not in toolTable", name)
		}
	}
	if len(tools) != len(names) {
		t.Errorf("tools/list shows %d tools, the server declares %d", len(tools), len(names))
	}
	for name, want := range toolTable {
		t.Run(name, func(t *testing.T) {
			// Each tool's examples start their own servers; what the tools
			// share (h, its in-process client) is only read or called
			// with arguments refused before anything is stored.
			t.Parallel()
			tool, ok := tools[name]
			if !ok {
				t.Fatal("not served")
			}
			// A tool lives in its profile's package, in a file named after it.
			if pkg := filepath.Dir(filepath.Dir(filepath.Dir(mcpserver.ToolExamplesFile(name)))); !fileExists(filepath.Join(pkg, name+".go")) {
				t.Errorf("no %s/%s.go: a tool's body is in a file named after it", pkg, name)
			}
			info := declared[name]
			if info.Profile != want.profile {
				t.Errorf("profile %q, want %q", info.Profile, want.profile)
			}
			// A hint left out means the specification's default (false,
			// true unless read-only, false).
			a := tool.Annotations
			readOnly := a.ReadOnlyHint != nil && *a.ReadOnlyHint
			destructive := !readOnly && (a.DestructiveHint == nil || *a.DestructiveHint)
			idempotent := a.IdempotentHint != nil && *a.IdempotentHint
			if readOnly != want.readOnly || destructive != want.destructive || idempotent != want.idempotent {
				t.Errorf("annotations readOnly %v destructive %v idempotent %v, want %v %v %v",
					readOnly, destructive, idempotent, want.readOnly, want.destructive, want.idempotent)
			}
			if _, ok := outputs[name]; !ok {
				t.Errorf("no output schema: every tool has one")
			}
			if len(tool.OutputSchema) > 0 {
				t.Errorf("tools/list sends an output schema (%d bytes): docs/tools.md shows it", len(tool.OutputSchema))
			}
			// The description is what an agent chooses and calls by: short,
			// complete, naming its required arguments. The long reference
			// (docs/tools.md) explains every argument, the reply, errors and
			// security, and has an example.
			if len(tool.Description) < 120 || len(tool.Description) > maxDescription || strings.Contains(tool.Description, "{{") {
				t.Errorf("description of %d bytes (want 120 to %d), or with an unfilled placeholder: move the detail to %s.reference.md", len(tool.Description), maxDescription, name)
			}
			for _, arg := range want.required {
				if !strings.Contains(tool.Description, arg) {
					t.Errorf("description does not name required argument %s", arg)
				}
			}
			ref := refs[name]
			lower := strings.ToLower(ref)
			for _, section := range []string{"arguments", "example", "errors", "security", "reply"} {
				if !strings.Contains(lower, section) {
					t.Errorf("reference lacks a %q section", section)
				}
			}
			minLen := 800
			if want.profile == mcpserver.ProfileGuide {
				minLen = 1500 // the envelope and its stats need more words
			}
			if len(ref) < minLen || strings.Contains(ref, "{{") {
				t.Errorf("reference of %d bytes, or with an unfilled placeholder", len(ref))
			}

			var in inputSchema
			if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
				t.Fatalf("input schema: %v", err)
			}
			inputSchema := compileSchema(t, name+"-input", tool.InputSchema)
			if _, example, ok := strings.Cut(tool.Description, "Example: "); ok {
				// The description's example is a call its schema accepts.
				var raw json.RawMessage
				var call any
				err := json.NewDecoder(strings.NewReader(example)).Decode(&raw)
				if err == nil {
					call, err = jsonschema.UnmarshalJSON(bytes.NewReader(raw))
				}
				if err != nil {
					t.Errorf("the description's example is not JSON: %v", err)
				} else if err := inputSchema.Validate(call); err != nil {
					t.Errorf("the description's example is refused by the input schema: %v", err)
				}
			} else if want.required != nil {
				t.Error("the description has no \"Example: \" call")
			}
			slices.Sort(in.Required)
			if in.Type != "object" || !slices.Equal(in.Required, want.required) || in.AdditionalProperties == nil || *in.AdditionalProperties {
				t.Errorf("input schema type %q required %q (want %q) additionalProperties %v", in.Type, in.Required, want.required, in.AdditionalProperties)
			}
			for prop, raw := range in.Properties {
				if !strings.Contains(string(raw), `"type"`) || !strings.Contains(string(raw), `"description"`) {
					t.Errorf("property %s has no type or description: %s", prop, raw)
				}
				if !strings.Contains(ref, prop) {
					t.Errorf("reference does not explain argument %s", prop)
				}
				if _, ok := info.Paths[prop]; pathLike(prop) && !ok {
					t.Errorf("path argument %s is not declared", prop)
				}
			}
			for prop, access := range info.Paths {
				if !strings.Contains(string(tool.InputSchema), `"`+prop+`"`) {
					t.Errorf("declared path argument %s is not in the schema", prop)
				}
				if want.readOnly && access != "r" {
					t.Errorf("read-only tool declares %s %q", prop, access)
				}
				// guide_snapshot declares its path read so that readers may
				// list; its guarded store checks write before creating.
				if !want.readOnly && want.profile == mcpserver.ProfileGuide && !strings.Contains(access, "w") && name != "guide_snapshot" {
					t.Errorf("guide tool that writes declares %s %q", prop, access)
				}
			}

			t.Run("schema agrees with decoder", func(t *testing.T) { schemaMatchesDecoder(t, h, name, in) })
			t.Run("examples", func(t *testing.T) { runExamples(t, name) })
		})
	}
}

// schemaMatchesDecoder checks that every argument the input schema declares
// is accepted by the tool's decoder, and that one it does not declare is
// refused, naming exactly the schema's arguments as accepted: the
// published schema and the code agree. Every call has a wrong type for
// every argument, so nothing is stored.
func schemaMatchesDecoder(t *testing.T, h *harness, name string, in inputSchema) {
	args := map[string]any{}
	for prop := range in.Properties {
		args[prop] = []any{}
	}
	if len(args) > 0 {
		r := h.callRaw(name, args)
		if !r.isError {
			t.Fatalf("accepted arrays for every argument: %s", r.text)
		}
		if msg := errorMessage(t, r); strings.Contains(msg, "unknown argument") {
			t.Errorf("a schema argument is unknown to the decoder: %s", msg)
		}
	}
	args["not_in_schema"] = 1
	msg := errorMessage(t, h.callRaw(name, args))
	if !strings.Contains(msg, `unknown argument(s) "not_in_schema"`) {
		t.Fatalf("an argument outside the schema was not refused: %s", msg)
	}
	if len(in.Properties) == 0 {
		if !strings.Contains(msg, "takes no arguments") {
			t.Errorf("takes no arguments, but the refusal says %q", msg)
		}
		return
	}
	i := strings.Index(msg, "accepted: ")
	if i < 0 {
		t.Fatalf("the refusal does not list the accepted arguments: %s", msg)
	}
	accepted, _, _ := strings.Cut(msg[i+len("accepted: "):], ";")
	got := strings.Split(accepted, ", ")
	want := make([]string, 0, len(in.Properties))
	for prop := range in.Properties {
		want = append(want, prop)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("decoder accepts %q, schema declares %q", got, want)
	}
}

// errorMessage returns the message of an error reply in any contract: the
// envelope's error.message, the provider's error, the fs error.message.
func errorMessage(t testing.TB, r rawReply) string {
	t.Helper()
	if !r.isError {
		t.Fatalf("not an error: %s", r.text)
	}
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.text), &v); err != nil || len(v.Error) == 0 {
		t.Fatalf("not an error object: %s", r.text)
	}
	var provider string
	if json.Unmarshal(v.Error, &provider) == nil {
		return provider
	}
	var obj struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(v.Error, &obj); err != nil {
		t.Fatalf("error object %s: %v", v.Error, err)
	}
	return obj.Message
}

// fileExists reports whether the file name exists.
func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
