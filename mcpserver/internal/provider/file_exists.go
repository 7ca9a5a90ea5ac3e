package provider

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// providerFileExists is file_exists: whether a file or directory exists at
// path. As its contract says, it does not fail: a path that cannot exist
// (outside the depot, invalid) is false too. Only a malformed call (path
// missing, not a string, unknown arguments) is an error.
func (s *tools) providerFileExists(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	p, err := s.decodeStatArgs(c, raw)
	c.Path = p.depot
	switch {
	case err != nil && !errors.Is(err, args.ErrInvalid):
		// Only the path was refused (invalid or leaving the depot): no
		// such path can exist.
		return tool.Reply{Data: false}, nil
	case err != nil:
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &p, ""); err != nil {
		// A path under /.snapshots that names no snapshot the caller may
		// read: nothing exists there for it.
		return tool.Reply{Data: false}, nil
	}
	_, err = p.tree(c).Stat(ctx, p.depot)
	return tool.Reply{Data: err == nil}, nil
}
