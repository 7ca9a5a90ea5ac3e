package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver"
)

// toolsListBudget is the most bytes the default profiles' tools/list reply
// may take: every client pays it in its context window on every session.
// The long reference lives in docs/tools.md, not in tools/list. It grew to
// 27.5 KiB with the tools of the depot's past and guide_changes, and came
// back to 24 KiB when each hint was sent only where it differs from the
// specification's default, the title once, the repeated argument words
// once (guide_cache_files' entries, guide_read_file's and
// guide_begin_upload's arguments shared with guide_cache_file) and the
// descriptions without their pointer to docs/tools.md: 23,507 bytes for
// 20 tools, guide_changes (792) included; 23,967 with the snapshot
// argument of read_file, read_file_binary and list_directory.
const toolsListBudget = 24 * 1024

// maxMountGrowth is how many bytes tools/list may grow for each byte of
// the mount point's path: the descriptions name the mount where an agent
// needs it (the provider tools take paths under it, guide_snapshot's
// snapshots are read there), not in every argument.
const maxMountGrowth = 10

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
		// The guide tools come with every profile.
		{"guide", &mcpserver.Options{Tools: []mcpserver.Profile{mcpserver.ProfileGuide}, Settings: mcpserver.Settings{MountPoint: testMount}}, 0},
		{"guide and fs", &mcpserver.Options{Tools: []mcpserver.Profile{mcpserver.ProfileFS}, Settings: mcpserver.Settings{MountPoint: testMount}}, 0},
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

// TestToolsListMountGrowth: a longer mount point lengthens tools/list by
// at most maxMountGrowth bytes for each byte of its path.
func TestToolsListMountGrowth(t *testing.T) {
	short, long := "/m", "/"+strings.Repeat("x", 99)
	a := len(toolsListReply(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: short}}))
	b := len(toolsListReply(t, &mcpserver.Options{Settings: mcpserver.Settings{MountPoint: long}}))
	growth := float64(b-a) / float64(len(long)-len(short))
	t.Logf("tools/list: %d bytes with the mount %s, %d with a mount of %d bytes: %.1f bytes per byte of the mount's path", a, short, b, len(long), growth)
	if growth > maxMountGrowth {
		t.Errorf("tools/list grows %.1f bytes per byte of the mount point, more than %d", growth, maxMountGrowth)
	}
}
