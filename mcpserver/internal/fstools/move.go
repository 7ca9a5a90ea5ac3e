package fstools

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsMove is move: renames a file or a directory tree in one atomic change.
func (s *tools) fsMove(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a, err := decodeTransfer(raw, false)
	c.Path = a.from
	if err != nil {
		return tool.Reply{}, err
	}
	c.Attrs = append(c.Attrs, slog.String("destination", a.to))
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	res, err := c.Store().Move(ctx, store.MoveRequest{From: a.from, To: a.to, IfAbsent: !a.overwrite, Writer: c.Who().String()})
	if err != nil {
		return tool.Reply{}, s.transferError(err, a)
	}
	c.Status = res.Status.String()
	c.Attrs = append(c.Attrs, slog.Int("entries", res.Entries))
	return tool.Reply{Data: fsCopyReply{
		Success: true, Source: relPath(a.from), Destination: relPath(a.to),
		Entries: res.Entries, MountPath: s.opts.MountPath(a.to), Warnings: s.fsCommitted(ctx, c),
	}}, nil
}
