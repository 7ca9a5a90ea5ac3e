package mcpserver_test

import (
	"encoding/json"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// toolsListBudget is the most bytes the default profiles' tools/list reply
// may take: every client pays it in its context window on every session.
// The long reference lives in docs/tools.md, not in tools/list. It was 24
// KiB until the three tools of the depot's past (guide_snapshot,
// guide_file_history, guide_restore: 2.2 KB with descriptions cut to what
// an agent needs to choose and call them) were added to a list that had
// 10 bytes left; 27.5 KiB when guide_changes (609 bytes) joined a list
// with 169 bytes left, until the descriptions are cut to the 24 KiB goal.
const toolsListBudget = 27*1024 + 512

// toolsListReply returns the JSON-RPC reply to tools/list, as sent, of a
// server with opts.
func toolsListReply(t *testing.T, opts *mcpserver.Options) []byte {
	t.Helper()
	h := newHarness(t, opts)
	reply := h.srv.MCP().HandleMessage(h.ctx, json.RawMessage(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	b, err := json.Marshal(reply)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestToolsListSize: the default tools/list reply stays within
// toolsListBudget. It logs each tool's share, and the figure for every
// profile, for whoever has to make room.
func TestToolsListSize(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   *mcpserver.Options
		budget int
	}{
		{"default", &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}}, toolsListBudget},
		{"all profiles", &mcpserver.Options{Tools: mcpserver.Profiles(), Settings: mcpserver.Settings{MountPoint: testMount}}, 0},
	} {
		raw := toolsListReply(t, c.opts)
		var reply struct {
			Result struct {
				Tools []struct {
					Name         string          `json:"name"`
					Description  string          `json:"description"`
					InputSchema  json.RawMessage `json:"inputSchema"`
					OutputSchema json.RawMessage `json:"outputSchema"`
				} `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(raw, &reply); err != nil || len(reply.Result.Tools) == 0 {
			t.Fatalf("%s: tools/list reply %.200s: %v", c.name, raw, err)
		}
		for _, tool := range reply.Result.Tools {
			one, _ := json.Marshal(tool)
			t.Logf("%s: %s %d bytes (description %d, input schema %d, output schema %d)", c.name, tool.Name, len(one), len(tool.Description), len(tool.InputSchema), len(tool.OutputSchema))
		}
		t.Logf("%s: tools/list reply of %d tools: %d bytes", c.name, len(reply.Result.Tools), len(raw))
		if c.budget > 0 && len(raw) > c.budget {
			t.Errorf("%s: tools/list reply is %d bytes, over the budget of %d: keep the long reference in the tool's <name>.reference.md (docs/tools.md)", c.name, len(raw), c.budget)
		}
	}
}
