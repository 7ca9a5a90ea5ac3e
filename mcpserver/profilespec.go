package mcpserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// hints are the behaviour annotations of a tool (MCP's readOnlyHint,
// destructiveHint and idempotentHint). Every tool touches only the depot,
// so openWorldHint is always false.
type hints struct {
	readOnly, destructive, idempotent bool
}

// profileSpec builds the definition of a provider or fs tool from its
// documents in tooldoc/<profile>/: <name>.md (the description) and
// <name>.input.json and, when structured is set, <name>.output.json (the
// reply on success), which is combined with the profile's error.json into
// an output schema that any reply of the tool satisfies. Placeholders such
// as {{max_read}} are filled with the configured limits. A missing or
// malformed document is a build defect, so it panics; the tests load every
// tool.
func (s *Server) profileSpec(p Profile, name, title string, h hints, structured bool) mcp.Tool {
	dir := string(p) + "/"
	input := s.profileDoc(dir + name + ".input.json")
	if !json.Valid([]byte(input)) {
		panic(fmt.Sprintf("mcpserver: %s input schema is not valid JSON", name))
	}
	t := mcp.Tool{
		Name:           name,
		Title:          title,
		Description:    s.profileDoc(dir + name + ".md"),
		RawInputSchema: json.RawMessage(input),
		Annotations: mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(h.readOnly),
			DestructiveHint: mcp.ToBoolPtr(h.destructive),
			IdempotentHint:  mcp.ToBoolPtr(h.idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		},
	}
	if structured {
		t.RawOutputSchema = s.profileOutputSchema(dir, name)
	}
	return t
}

// profileOutputSchema returns {"type": "object", "anyOf": [result, error]}
// with the tool's result schema and the profile's error schema as
// definitions.
func (s *Server) profileOutputSchema(dir, name string) json.RawMessage {
	var result, fail any
	for doc, v := range map[string]any{dir + name + ".output.json": &result, dir + "error.json": &fail} {
		if err := json.Unmarshal([]byte(s.profileDoc(doc)), v); err != nil {
			panic(fmt.Sprintf("mcpserver: tool document %s: %v", doc, err))
		}
	}
	out, err := json.Marshal(map[string]any{
		"type":  "object",
		"anyOf": []any{map[string]any{"$ref": "#/$defs/result"}, map[string]any{"$ref": "#/$defs/error"}},
		"$defs": map[string]any{"result": result, "error": fail},
	})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: %s output schema: %v", name, err))
	}
	return out
}

// profileDoc returns a tool document with the shared placeholders (see
// doc) and the profiles' own filled in.
func (s *Server) profileDoc(name string) string {
	mount := s.opts.MountPoint
	if mount == "" {
		mount = "/mnt/depot"
	}
	if strings.HasSuffix(name, ".json") {
		quoted, _ := json.Marshal(mount)
		mount = string(quoted[1 : len(quoted)-1])
	}
	return strings.NewReplacer(
		"{{max_read}}", strconv.FormatInt(s.opts.MaxReadBytes, 10),
		"{{max_list}}", strconv.Itoa(s.opts.MaxListEntries),
		"{{mount}}", mount,
	).Replace(s.doc(name))
}
