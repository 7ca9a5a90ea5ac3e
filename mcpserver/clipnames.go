package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/clip"
)

// clipToolName bounds the name of a tools/call before mcp-go looks it up:
// mcp-go echoes an unknown name in its error, and the name reaches the log
// line and the audit record. No tool has a name longer than clip.Max, so a
// clipped name is refused as unknown, with its length and hash.
func clipToolName(_ context.Context, _ any, req *mcp.CallToolRequest) {
	req.Params.Name = clip.String(req.Params.Name)
}
