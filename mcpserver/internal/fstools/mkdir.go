package fstools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsMkdirReply is the reply of mkdir.
type fsMkdirReply struct {
	Success bool   `json:"success"`
	Path    string `json:"path"`
	// Beyond the contract: false when the directory existed already.
	Created  bool     `json:"created"`
	Warnings []string `json:"warnings,omitempty"`
}

// fsMkdir is mkdir: an explicit directory, with its parents unless
// recursive is false. An existing directory is success (created false).
func (s *tools) fsMkdir(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a := struct {
		Path      fsPath `json:"path"`
		Recursive bool   `json:"recursive"`
	}{Path: s.path()}
	err := args.Fill(raw, c.OwnArgs(), &a)
	p, recursive := a.Path.p, a.Recursive
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	e, err := c.Store().Stat(ctx, p)
	switch {
	case err == nil && e.IsDir():
		return tool.Reply{Data: fsMkdirReply{Success: true, Path: relPath(p)}}, nil
	case err == nil:
		return tool.Reply{}, &fsError{code: fsExists, msg: "A file already exists at " + relPath(p), path: p, err: store.ErrExist}
	case !errors.Is(err, store.ErrNotExist):
		return tool.Reply{}, fsStoreError(err, p)
	}
	if !recursive {
		if err := s.parentExists(ctx, c, p); err != nil {
			return tool.Reply{}, err
		}
	}
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	_, err = c.Store().Declare(ctx, store.DeclareRequest{
		Entries: []store.Declaration{{Path: p, Kind: store.KindDir}},
		Writer:  c.Who().String(),
		Source:  "fs mkdir",
	})
	if err != nil {
		return tool.Reply{}, fsStoreError(err, p)
	}
	c.Status = "created"
	return tool.Reply{Data: fsMkdirReply{Success: true, Path: relPath(p), Created: true, Warnings: s.fsCommitted(ctx, c)}}, nil
}
