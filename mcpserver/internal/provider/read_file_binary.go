package provider

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// providerReadFileBinary is read_file_binary: a file's content in base64.
func (s *tools) providerReadFileBinary(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a, err := s.decodeReadArgs(raw, false)
	c.Path = a.path.depot
	if err != nil {
		return tool.Reply{}, err
	}
	data, sum, err := s.providerRead(ctx, c, a.path, a.maxSize)
	if err != nil {
		return tool.Reply{}, err
	}
	c.Size, c.SHA256 = int64(len(data)), sum
	return tool.Reply{Data: base64.StdEncoding.EncodeToString(data)}, nil
}
