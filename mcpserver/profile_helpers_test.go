package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/depotfs/depotfs/store"
)

// rawReply is a tool reply as the profiles' contracts define it: the text
// of its one content block, isError, and the structured content if any.
type rawReply struct {
	text       string
	isError    bool
	structured json.RawMessage
}

// callRaw calls a tool of the provider or fs profile and checks what every
// such reply must satisfy: one text block, structured content (when there
// is some) valid against the tool's output schema and holding the text's
// value (see sameValue), and no host path of the harness in the reply.
func (h *harness) callRaw(tool string, args any) rawReply {
	h.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := h.client.CallTool(h.ctx, req)
	if err != nil {
		h.t.Fatalf("CallTool %s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		h.t.Fatalf("%s: %d content blocks, want 1", tool, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		h.t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	r := rawReply{text: text.Text, isError: res.IsError, structured: res.RawStructuredContent}
	if strings.Contains(r.text, h.dir) {
		h.t.Fatalf("%s: reply reveals the host directory %s: %s", tool, h.dir, r.text)
	}
	if len(r.structured) > 0 {
		if !sameValue(h.t, r.structured, r.text) {
			h.t.Fatalf("%s: text %s is not the value of the structured content %s", tool, r.text, r.structured)
		}
		sch := h.schemas.of(h.t, tool)
		if sch == nil {
			h.t.Fatalf("%s: structured content, but no output schema: %s", tool, r.structured)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.structured))
		if err != nil {
			h.t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			h.t.Fatalf("%s: reply does not match the output schema: %v\n%s", tool, err, r.structured)
		}
	}
	return r
}

// sameValue reports whether text says what the structured content raw
// does: text is raw's JSON (an object reply, an error), or raw is an
// object of one property whose value is text (a provider tool's bare value
// under Settings.OutputSchemas: a string as is, anything else as JSON).
func sameValue(t testing.TB, raw json.RawMessage, text string) bool {
	t.Helper()
	var a any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("structured content: %v", err)
	}
	var b any
	if json.Unmarshal([]byte(text), &b) == nil && mustJSON(t, a) == mustJSON(t, b) {
		return true
	}
	obj, ok := a.(map[string]any)
	if !ok || len(obj) != 1 {
		return false
	}
	for _, v := range obj {
		if s, ok := v.(string); ok {
			return s == text
		}
		return json.Unmarshal([]byte(text), &b) == nil && mustJSON(t, v) == mustJSON(t, b)
	}
	return false
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// put stores a file directly in the store, bypassing the tools.
func (h *harness) seed(p string, data []byte) store.Entry {
	h.t.Helper()
	res, err := h.st.Put(context.Background(), store.PutRequest{Path: p, Data: data, MTime: time.Date(2024, 4, 10, 15, 30, 0, 0, time.UTC)})
	if err != nil {
		h.t.Fatalf("Put %s: %v", p, err)
	}
	return res.Entry
}

// declare adds a placeholder file (declared, content never pushed).
func (h *harness) seedPlaceholder(p string, size int64) {
	h.t.Helper()
	_, err := h.st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{{Path: p, Kind: store.KindFile, Size: size}}})
	if err != nil {
		h.t.Fatalf("Declare %s: %v", p, err)
	}
}

// treeState is everything a client can see of the store: its revision and
// every entry.
type treeState struct {
	rev     uint64
	entries []store.Entry
}

// state snapshots the whole store.
func (h *harness) depotState() treeState {
	h.t.Helper()
	st := treeState{rev: h.revision()}
	var walk func(dir string)
	walk = func(dir string) {
		es, err := h.st.ReadDir(context.Background(), dir)
		if err != nil {
			h.t.Fatalf("ReadDir %s: %v", dir, err)
		}
		for _, e := range es {
			st.entries = append(st.entries, e)
			if e.IsDir() {
				walk(e.Path)
			}
		}
	}
	walk("/")
	return st
}

// unchanged fails if the store moved on since before.
func (h *harness) mustBeUnchanged(what string, before treeState) {
	h.t.Helper()
	after := h.depotState()
	if after.rev != before.rev || len(after.entries) != len(before.entries) {
		h.t.Fatalf("%s changed the store: revision %d -> %d, %d -> %d entries", what, before.rev, after.rev, len(before.entries), len(after.entries))
	}
	for i := range after.entries {
		if after.entries[i].Path != before.entries[i].Path || after.entries[i].Revision != before.entries[i].Revision {
			h.t.Fatalf("%s changed %s", what, after.entries[i].Path)
		}
	}
}

// use makes the harness report to t, a subtest, until t ends.
func (h *harness) use(t *testing.T) {
	prev := h.t
	h.t = t
	t.Cleanup(func() { h.t = prev })
}

// declareDir is a request declaring one explicit directory.
func declareDir(p string) store.DeclareRequest {
	return store.DeclareRequest{Entries: []store.Declaration{{Path: p, Kind: store.KindDir}}}
}

// callTool calls a tool from any goroutine, without checks.
func callTool(h *harness, tool string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return h.client.CallTool(h.ctx, req)
}
