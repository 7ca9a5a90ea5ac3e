package fstools

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsTransfer is copy (isCopy) or move. Copy copies a file, or with
// recursive (the default) a directory tree, in one atomic change; the
// copies share the source's content, so the depot writes no file bytes,
// whatever their size. Move renames a file or a directory tree in one
// atomic change.
func (s *tools) fsTransfer(isCopy bool) tool.Func {
	return func(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
		a, err := s.decodeTransfer(c, raw, isCopy)
		c.Path = a.from
		if err != nil {
			return tool.Reply{}, err
		}
		c.Attrs = append(c.Attrs, slog.String("destination", a.to))
		if !a.Recursive {
			e, err := c.Store().Stat(ctx, a.from)
			if err != nil {
				return tool.Reply{}, fsStoreError(err, a.from)
			}
			if e.IsDir() {
				return tool.Reply{}, &fsError{code: fsInvalid, msg: "The source is a directory; set recursive to copy it with everything in it: " + relPath(a.from), path: a.from, err: args.ErrInvalid}
			}
		}
		ctx, cancel := s.opts.CommitContext(ctx)
		defer cancel()
		var res store.CopyResult
		if isCopy {
			res, err = c.Store().Copy(ctx, store.CopyRequest{From: a.from, To: a.to, IfAbsent: !a.Overwrite, Writer: c.Who().String()})
		} else {
			res, err = c.Store().Move(ctx, store.MoveRequest{From: a.from, To: a.to, IfAbsent: !a.Overwrite, Writer: c.Who().String()})
		}
		if err != nil {
			return tool.Reply{}, s.transferError(err, a)
		}
		c.Status = res.Status.String()
		out := fsCopyReply{Success: true, Source: relPath(a.from), Destination: relPath(a.to),
			Entries: res.Entries, MountPath: s.opts.MountPath(a.to)}
		if isCopy {
			c.Attrs = append(c.Attrs, slog.Int64("bytes", res.Bytes))
			out.BytesCopied = &res.Bytes
		}
		c.Attrs = append(c.Attrs, slog.Int("entries", res.Entries))
		out.Warnings = s.fsCommitted(ctx, c)
		return tool.Reply{Data: out}, nil
	}
}
