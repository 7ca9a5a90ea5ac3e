package tool

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Hints are the behaviour annotations of a tool (MCP's readOnlyHint,
// destructiveHint and idempotentHint). Every tool touches only the depot,
// so openWorldHint is always false.
type Hints struct {
	ReadOnly, Destructive, Idempotent bool
}

// Docs are the documents of one profile's tools, in the one layout every
// profile uses: in its directory,
//
//   - <tool>.md, the description tools/list sends: what the tool does,
//     when to choose it, its key constraints and one example, short because
//     every client pays for it in its context window on every session;
//   - <tool>.reference.md, the long reference (every argument explained,
//     the reply, examples, errors, security notes), rendered only into
//     docs/tools.md (optional: without it the description is the reference);
//   - <tool>.input.json, the input schema;
//   - <tool>.output.json, the schema of the tool's result (every tool has
//     one). tools/list declares it only with Settings.OutputSchemas
//     (outputSchema is optional in every revision and the frames are
//     large); replies carry their structured content either way, except
//     a provider tool whose contract returns a bare value, which sends it
//     only when the schema is declared. The tests validate every
//     structured reply against it and docs/tools.md shows it;
//   - reply.json, the profile's reply frame: the schema any reply of its
//     tools satisfies, in which the result is "#/$defs/<slot>";
//   - the shared definitions the frame or results refer to (error.json,
//     file.json), named in NewDocs;
//   - examples/<tool>.json, the documented examples (see package mcpserver).
//
// Placeholders such as {{max_read}} are filled with the configured limits,
// JSON-escaped in .json documents. A missing or malformed document is a
// build defect, so Spec panics; the tests build every tool.
type Docs struct {
	fsys   fs.FS
	dir    string
	slot   string
	shared map[string]string // $defs name → document
	// fillText and fillJSON fill the placeholders of a document, the
	// second with the values JSON-escaped for .json documents. Built once:
	// a server reads every tool's documents at its start.
	fillText, fillJSON *strings.Replacer
}

// NewDocs returns the documents in dir of fsys (usually an embed.FS of the
// profile's package). slot names the result in the frame's $defs; shared
// maps further $defs names to documents; extra are pairs of further
// placeholders and their values, beside the limits every profile may use.
func NewDocs(fsys fs.FS, dir, slot string, shared map[string]string, env *Env, extra ...string) *Docs {
	fill := map[string]string{
		"{{uploads}}":     env.Uploads,
		"{{mount}}":       cmp.Or(env.MountPoint, "/mnt/depot"),
		"{{max_content}}": strconv.FormatInt(env.MaxContentBytes, 10),
		"{{max_chunks}}":  strconv.Itoa(env.MaxChunks),
		"{{max_entries}}": strconv.Itoa(env.MaxListEntries),
		"{{max_list}}":    strconv.Itoa(env.MaxListEntries),
		"{{max_read}}":    strconv.FormatInt(env.MaxReadBytes, 10),
		"{{max_file}}":    maxFileDoc(env.MaxFileBytes),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		fill[extra[i]] = extra[i+1]
	}
	text := make([]string, 0, 2*len(fill))
	quoted := make([]string, 0, 2*len(fill))
	for k, v := range fill {
		q, _ := json.Marshal(v) // a string: it cannot fail
		text = append(text, k, v)
		quoted = append(quoted, k, string(q[1:len(q)-1]))
	}
	return &Docs{fsys: fsys, dir: dir, slot: slot, shared: shared,
		fillText: strings.NewReplacer(text...), fillJSON: strings.NewReplacer(quoted...)}
}

// maxFileDoc describes the file size limit checked at the edge.
func maxFileDoc(n int64) string {
	if n <= 0 {
		return "the depot's file size limit (see guide_cache_stats)"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Tools sets the Docs of every tool of list to d and returns list.
func (d *Docs) Tools(list ...Tool) []Tool {
	for i := range list {
		list[i].Docs = d
	}
	return list
}

// Spec builds a tool's definition from its documents.
func (d *Docs) Spec(name, title string, h Hints) mcp.Tool {
	input := d.doc(name + ".input.json")
	if !json.Valid([]byte(input)) {
		panic(fmt.Sprintf("mcpserver: %s input schema is not valid JSON", name))
	}
	return mcp.Tool{
		Name:           name,
		Title:          title,
		Description:    strings.TrimSpace(d.doc(name + ".md")),
		RawInputSchema: json.RawMessage(input),
		Annotations:    h.annotations(),
	}
}

// annotations returns h as MCP's tool annotations, each hint only where
// it differs from the default the specification gives it (readOnlyHint
// false, destructiveHint true and meaningful only when not read-only,
// idempotentHint false, openWorldHint true): every client pays for
// tools/list on every session, and a hint left out means its default.
// The title is the tool's own (Tool.Title), not repeated here.
func (h Hints) annotations() mcp.ToolAnnotation {
	a := mcp.ToolAnnotation{OpenWorldHint: mcp.ToBoolPtr(false)}
	if h.ReadOnly {
		a.ReadOnlyHint = mcp.ToBoolPtr(true)
	} else if !h.Destructive {
		a.DestructiveHint = mcp.ToBoolPtr(false)
	}
	if h.Idempotent {
		a.IdempotentHint = mcp.ToBoolPtr(true)
	}
	return a
}

// Effective returns the hints a tool's annotations a declare, reading a
// hint left out as the default the specification gives it.
func Effective(a mcp.ToolAnnotation) Hints {
	h := Hints{ReadOnly: a.ReadOnlyHint != nil && *a.ReadOnlyHint, Idempotent: a.IdempotentHint != nil && *a.IdempotentHint}
	h.Destructive = !h.ReadOnly && (a.DestructiveHint == nil || *a.DestructiveHint)
	return h
}

// Reference returns a tool's long reference: its <tool>.reference.md, or
// its description when it has none.
func (d *Docs) Reference(name string) string {
	if d.has(name + ".reference.md") {
		return d.doc(name + ".reference.md")
	}
	return d.doc(name + ".md")
}

// OutputSchema returns the schema every reply of a tool satisfies (see
// outputSchema), and false for a tool without a <tool>.output.json.
func (d *Docs) OutputSchema(name string) (json.RawMessage, bool) {
	if !d.HasOutputSchema(name) {
		return nil, false
	}
	return d.outputSchema(name), true
}

// HasOutputSchema reports whether a tool has a <tool>.output.json, without
// building its schema (which decodes and encodes the whole reply frame).
func (d *Docs) HasOutputSchema(name string) bool {
	return d.has(name + ".output.json")
}

// has reports whether the document exists.
func (d *Docs) has(doc string) bool {
	_, err := fs.Stat(d.fsys, path.Join(d.dir, doc))
	return err == nil
}

// outputSchema returns the profile's reply frame with the tool's result
// schema (under the slot) and the shared definitions in its $defs.
func (d *Docs) outputSchema(name string) json.RawMessage {
	var frame map[string]any
	d.decode("reply.json", &frame)
	defs, _ := frame["$defs"].(map[string]any)
	if defs == nil {
		defs = map[string]any{}
	}
	for key, doc := range d.shared {
		var v any
		d.decode(doc, &v)
		defs[key] = v
	}
	var result any
	d.decode(name+".output.json", &result)
	defs[d.slot] = result
	frame["$defs"] = defs
	out, _ := json.Marshal(frame) // decoded from JSON: it cannot fail
	return out
}

// decode parses a JSON document into v.
func (d *Docs) decode(doc string, v any) {
	if err := json.Unmarshal([]byte(d.doc(doc)), v); err != nil {
		panic(fmt.Sprintf("mcpserver: tool document %s: %v", doc, err))
	}
}

// doc returns a document with its placeholders filled in.
func (d *Docs) doc(name string) string {
	b, err := fs.ReadFile(d.fsys, path.Join(d.dir, name))
	if err != nil {
		panic(fmt.Sprintf("mcpserver: tool document %s: %v", name, err))
	}
	if strings.HasSuffix(name, ".json") {
		return d.fillJSON.Replace(string(b))
	}
	return d.fillText.Replace(string(b))
}

// Examples returns the raw examples file of a tool, and false when it has
// none.
func (d *Docs) Examples(name string) ([]byte, bool) {
	b, err := fs.ReadFile(d.fsys, path.Join(d.dir, "examples", name+".json"))
	return b, err == nil
}
