package fstools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// removeAttempts bounds how often delete retries when the entry changes
// between its Stat and its Remove.
const removeAttempts = 4

// fsDeleteReply is the reply of delete.
type fsDeleteReply struct {
	Success bool   `json:"success"`
	Path    string `json:"path"`
	// Type is what was deleted: "file" or "directory"; "none" when force
	// let a missing path pass.
	Type     string   `json:"type"`
	Warnings []string `json:"warnings,omitempty"`
}

// fsDelete is delete: a file, an empty directory, or with recursive a
// directory and everything in it, in one atomic change. With force, a
// path that does not exist is not an error.
func (s *tools) fsDelete(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a := struct {
		Path      fsPath `json:"path"`
		Recursive bool   `json:"recursive"`
		Force     bool   `json:"force"`
	}{Path: s.path()}
	err := args.Fill(raw, c.OwnArgs(), &a, func(o *args.Object) {
		if a.Path.p == depotpath.Root {
			o.Problems().Addf("path", "the depot root cannot be deleted; delete the entries in it")
		}
	})
	p, recursive, force := a.Path.p, a.Recursive, a.Force
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	for range removeAttempts {
		e, err := c.Store().Stat(ctx, p)
		if errors.Is(err, store.ErrNotExist) && force {
			c.Status = "absent"
			return tool.Reply{Data: fsDeleteReply{Success: true, Path: relPath(p), Type: "none"}}, nil
		}
		if err != nil {
			return tool.Reply{}, fsStoreError(err, p)
		}
		// Conditional on the entry described, so the reply's type is
		// the type of what was removed.
		err = c.Store().Remove(ctx, store.RemoveRequest{Path: p, Recursive: recursive, IfRevision: e.Revision, Writer: c.Who().String()})
		if errors.Is(err, store.ErrRevision) {
			continue
		}
		if err != nil {
			return tool.Reply{}, fsStoreError(err, p)
		}
		c.Status = "deleted"
		return tool.Reply{Data: fsDeleteReply{Success: true, Path: relPath(p), Type: e.Kind.String(), Warnings: s.fsCommitted(ctx, c)}}, nil
	}
	return tool.Reply{}, fsStoreError(store.ErrRevision, p)
}
