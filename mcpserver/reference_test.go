package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver"
)

var update = flag.Bool("update", false, "rewrite the recorded replies of the tool examples (internal/*/doc/examples) from actual runs")

// exampleReply is what an example records of a reply: the structured
// content, else the text as JSON if it is JSON, else the text as a string.
func exampleReply(t testing.TB, res *mcp.CallToolResult) json.RawMessage {
	t.Helper()
	if len(res.RawStructuredContent) > 0 {
		return res.RawStructuredContent
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	raw, err := json.Marshal(text)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// blank sets the values at a dotted path ("*" for any key or index) to nil.
func blank(v any, path []string) {
	if len(path) == 0 {
		return
	}
	set := func(get func() any, put func(any)) {
		if len(path) == 1 {
			put(nil)
			return
		}
		blank(get(), path[1:])
	}
	switch x := v.(type) {
	case map[string]any:
		for k := range x {
			if path[0] == "*" || path[0] == k {
				set(func() any { return x[k] }, func(n any) { x[k] = n })
			}
		}
	case []any:
		for i := range x {
			if path[0] == "*" || path[0] == strconv.Itoa(i) {
				set(func() any { return x[i] }, func(n any) { x[i] = n })
			}
		}
	}
}

// sameReply compares two replies, ignoring the given paths and the
// envelope's duration, request id and time waited, which differ on every
// call (a loaded machine makes a call wait a few ms for its read).
func sameReply(t testing.TB, got, want json.RawMessage, ignore []string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("reply: %v", err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		return false
	}
	for _, p := range append([]string{"stats.duration_ms", "stats.request_id", "stats.waited_ms"}, ignore...) {
		blank(g, strings.Split(p, "."))
		blank(w, strings.Split(p, "."))
	}
	return reflect.DeepEqual(g, w)
}

// runExamples runs every documented example of the tool name on a fresh
// depot and compares the reply with the recorded one, so the examples of
// the tool reference cannot rot. Every tool has at least one example. With
// -update the recorded replies are rewritten from the actual ones.
func runExamples(t *testing.T, name string) {
	examples, err := mcpserver.ToolExamples(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Fatalf("no examples: add %s (title, setup, arguments; then go test -run TestTools -update records the replies)", mcpserver.ToolExamplesFile(name))
	}
	changed := false
	for i := range examples {
		ex := &examples[i]
		h := allProfiles(t)
		for _, c := range ex.Setup {
			res, err := callTool(h, c.Tool, c.Arguments)
			if err != nil || res.IsError {
				t.Fatalf("example %q: setup %s failed: %v %+v", ex.Title, c.Tool, err, res)
			}
		}
		res, err := callTool(h, name, ex.Arguments)
		if err != nil {
			t.Fatalf("example %q: %v", ex.Title, err)
		}
		got := exampleReply(t, res)
		if res.IsError == ex.IsError && sameReply(t, got, ex.Reply, ex.Ignore) {
			continue
		}
		if *update {
			ex.Reply, ex.IsError, changed = got, res.IsError, true
			continue
		}
		t.Errorf("example %q replies (isError %v)\n%s\nbut %s records (isError %v)\n%s\nRun go test ./mcpserver -run TestTools -update to record the new reply, after checking it is right.",
			ex.Title, res.IsError, got, name, ex.IsError, ex.Reply)
	}
	if changed {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(examples); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mcpserver.ToolExamplesFile(name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExamplesBelongToTools: every examples file documents a tool of the
// package it lies in.
func TestExamplesBelongToTools(t *testing.T) {
	files, err := filepath.Glob("internal/*/doc/examples/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples files found")
	}
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".json"); mcpserver.ToolExamplesFile(name) != f {
			t.Errorf("%s documents a tool the server does not have there", f)
		}
	}
}

// TestToolDocsCoverEveryTool generates the reference for every profile and
// checks that each tool tools/list shows has its section, with each of its
// arguments, an example and security notes, and nothing else is there.
func TestToolDocsCoverEveryTool(t *testing.T) {
	var b bytes.Buffer
	if err := mcpserver.WriteToolDocs(&b, &mcpserver.Options{Tools: mcpserver.Profiles()}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	tools := listTools(t, allProfiles(t))
	if n := strings.Count(doc, "\n### `"); n != len(tools) {
		t.Errorf("%d tool sections for %d tools", n, len(tools))
	}
	for name, tool := range tools {
		t.Run(name, func(t *testing.T) {
			_, section, ok := strings.Cut(doc, "\n### `"+name+"`\n")
			if !ok {
				t.Fatalf("no section for %s", name)
			}
			section, _, _ = strings.Cut(section, "\n### `")
			var in inputSchema
			if err := json.Unmarshal(tool.InputSchema, &in); err != nil {
				t.Fatal(err)
			}
			for prop := range in.Properties {
				req := "optional"
				if slices.Contains(in.Required, prop) {
					req = "required"
				}
				if !hasRow(section, prop, req) {
					t.Errorf("argument %s is not documented as %s", prop, req)
				}
			}
			for _, want := range []string{"[`" + name + "`](#" + name + ")", "#### Arguments", "#### Examples\n\n", "```json", "#### Security\n\n"} {
				if !strings.Contains(section, want) && !strings.Contains(doc, want) {
					t.Errorf("section lacks %q", want)
				}
			}
			if strings.Contains(section, "#### Examples\n\nNone.") || strings.Contains(section, "No notes beyond those of the server") {
				t.Errorf("section has no example or no security notes:\n%s", section)
			}
		})
	}
}

// hasRow reports whether a section's argument table has a row for the
// top-level argument prop with the given required column.
func hasRow(section, prop, required string) bool {
	for _, line := range strings.Split(section, "\n") {
		if rest, ok := strings.CutPrefix(line, "| `"+prop+"` | "); ok {
			cols := strings.SplitN(rest, " | ", 3)
			return len(cols) >= 2 && cols[1] == required
		}
	}
	return false
}
