package mcpserver_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// allProfiles is a harness serving every profile.
func allProfiles(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, &mcpserver.Options{MountPoint: testMount, Tools: mcpserver.Profiles()})
}

// wantProfiles lists the tools of each profile besides guide, with their
// annotations: read-only, destructive, idempotent.
var wantProfiles = map[string]struct {
	profile                           mcpserver.Profile
	readOnly, destructive, idempotent bool
}{
	"read_file":           {mcpserver.ProfileProvider, true, false, true},
	"read_file_binary":    {mcpserver.ProfileProvider, true, false, true},
	"list_directory":      {mcpserver.ProfileProvider, true, false, true},
	"file_exists":         {mcpserver.ProfileProvider, true, false, true},
	"get_file_stats":      {mcpserver.ProfileProvider, true, false, true},
	"calculate_file_hash": {mcpserver.ProfileProvider, true, false, true},
	"find_files":          {mcpserver.ProfileProvider, true, false, true},
	"list":                {mcpserver.ProfileFS, true, false, true},
	"read":                {mcpserver.ProfileFS, true, false, true},
	"write":               {mcpserver.ProfileFS, false, true, false},
	"mkdir":               {mcpserver.ProfileFS, false, false, true},
	"delete":              {mcpserver.ProfileFS, false, true, true},
	"copy":                {mcpserver.ProfileFS, false, true, true},
	"move":                {mcpserver.ProfileFS, false, true, true},
	"info":                {mcpserver.ProfileFS, true, false, true},
	"search":              {mcpserver.ProfileFS, true, false, true},
}

// pathLike reports whether an argument name says it holds a path.
func pathLike(name string) bool {
	return strings.HasSuffix(name, "path") || name == "source" || name == "destination"
}

// TestProfileTools checks the definitions of the provider and fs tools:
// names, annotations, descriptions an LLM can work from, strict input
// schemas, and a declaration for every path argument.
func TestProfileTools(t *testing.T) {
	h := allProfiles(t)
	declared := mcpserver.DeclaredTools(h.srv)
	tools := listTools(t, h)
	for name, want := range wantProfiles {
		t.Run(name, func(t *testing.T) {
			tool, ok := tools[name]
			if !ok {
				t.Fatal("not served")
			}
			if declared[name].Profile != want.profile {
				t.Errorf("profile %q, want %q", declared[name].Profile, want.profile)
			}
			a := tool.Annotations
			if a.ReadOnlyHint == nil || *a.ReadOnlyHint != want.readOnly || a.DestructiveHint == nil || *a.DestructiveHint != want.destructive ||
				a.IdempotentHint == nil || *a.IdempotentHint != want.idempotent {
				t.Errorf("annotations readOnly %v destructive %v idempotent %v, want %v %v %v",
					a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, want.readOnly, want.destructive, want.idempotent)
			}
			for _, section := range []string{"Arguments:", "Reply", "Example", "Errors", "Security:"} {
				if !strings.Contains(tool.Description, section) {
					t.Errorf("description lacks %q", section)
				}
			}
			if len(tool.Description) < 800 || strings.Contains(tool.Description, "{{") {
				t.Errorf("description of %d bytes, or with an unfilled placeholder", len(tool.Description))
			}
			var in inputSchema
			if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
				t.Fatalf("input schema: %v", err)
			}
			compileSchema(t, name+"-input", tool.InputSchema)
			if in.Type != "object" || in.AdditionalProperties == nil || *in.AdditionalProperties {
				t.Errorf("input schema type %q additionalProperties %v", in.Type, in.AdditionalProperties)
			}
			for prop, raw := range in.Properties {
				if !strings.Contains(string(raw), `"type"`) || !strings.Contains(string(raw), `"description"`) {
					t.Errorf("property %s has no type or description: %s", prop, raw)
				}
				if !strings.Contains(tool.Description, prop) {
					t.Errorf("description does not explain argument %s", prop)
				}
				if _, ok := declared[name].Paths[prop]; pathLike(prop) && !ok {
					t.Errorf("path argument %s is not declared", prop)
				}
			}
			for prop, access := range declared[name].Paths {
				if _, ok := in.Properties[prop]; !ok {
					t.Errorf("declared path argument %s is not in the schema", prop)
				}
				if want.readOnly && access != "r" {
					t.Errorf("read-only tool declares %s %q", prop, access)
				}
			}
		})
	}
	for name, info := range declared {
		if _, ok := wantProfiles[name]; !ok && info.Profile != mcpserver.ProfileGuide {
			t.Errorf("tool %s of profile %s is not checked here", name, info.Profile)
		}
	}
}

// profileError returns the message of a provider or fs error reply.
func profileError(t testing.TB, r rawReply) string {
	t.Helper()
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
	var fsErr struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(v.Error, &fsErr); err != nil {
		t.Fatalf("error object %s: %v", v.Error, err)
	}
	return fsErr.Message
}

// TestProfileSchemasMatchDecoders checks, for every provider and fs tool,
// that the decoder knows every argument the schema declares and refuses
// one it does not.
func TestProfileSchemasMatchDecoders(t *testing.T) {
	h := allProfiles(t)
	for name, tool := range listTools(t, h) {
		if _, ok := wantProfiles[name]; !ok {
			continue
		}
		var in inputSchema
		if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
			t.Fatal(err)
		}
		args := map[string]any{}
		for prop := range in.Properties {
			args[prop] = []any{} // a wrong type for every argument
		}
		r := h.callRaw(name, args)
		if !r.isError {
			t.Fatalf("%s accepted arrays for every argument: %s", name, r.text)
		}
		if msg := profileError(t, r); strings.Contains(msg, "unknown argument") {
			t.Errorf("%s: a schema argument is unknown to the decoder: %s", name, msg)
		}
		args["not_in_schema"] = 1
		msg := profileError(t, h.callRaw(name, args))
		i := strings.Index(msg, "accepted: ")
		if !strings.Contains(msg, `unknown argument(s) "not_in_schema"`) || i < 0 {
			t.Fatalf("%s: an argument outside the schema was not refused: %s", name, msg)
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
			t.Errorf("%s: decoder accepts %q, schema declares %q", name, got, want)
		}
	}
}

func TestParseProfiles(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    []mcpserver.Profile
		wantErr string
	}{
		{"guide,provider", []mcpserver.Profile{"guide", "provider"}, ""},
		{"fs", []mcpserver.Profile{"guide", "fs"}, ""},
		{" provider , fs ,provider", []mcpserver.Profile{"guide", "provider", "fs"}, ""},
		{"guide", []mcpserver.Profile{"guide"}, ""},
		{"", nil, "no tool profile"},
		{" , ", nil, "no tool profile"},
		{"guide,ftp", nil, `unknown tool profile "ftp"`},
	} {
		got, err := mcpserver.ParseProfiles(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "guide, provider, fs") {
				t.Errorf("ParseProfiles(%q) error %v, want one containing %q and the valid names", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseProfiles(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
