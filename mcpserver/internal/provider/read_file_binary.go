package provider

import (
	"context"
	"encoding/json"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// providerReadFileBinary is read_file_binary: a file's content in base64.
func (s *tools) providerReadFileBinary(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	return s.readFile(ctx, c, raw, false)
}
