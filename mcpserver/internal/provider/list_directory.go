package provider

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// providerListDirectory is list_directory: the paths of a directory's
// entries, files and directories, matching pattern; with recursive, of
// every entry below it (pattern matching names at any depth).
func (s *tools) providerListDirectory(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		DirectoryPath string            `json:"directory_path" args:"path"`
		Pattern       args.Glob         `json:"pattern"`
		Recursive     bool              `json:"recursive"`
		MaxFiles      int64             `json:"max_files"`
		Snapshot      tool.SnapshotName `json:"snapshot"`
	}
	err := args.Fill(raw, c.OwnArgs(), &a)
	dir := s.providerPath("directory_path", a.DirectoryPath)
	c.Path = dir.depot
	if err != nil {
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &dir, string(a.Snapshot)); err != nil {
		return tool.Reply{}, err
	}
	return s.providerWalk(ctx, c, dir, a.Recursive, a.MaxFiles, func(e store.Entry) bool {
		return a.Pattern.Match(depotpath.Base(e.Path))
	})
}

// providerWalk replies with, as the caller names them, the paths of the
// entries below dir that keep accepts, at most maxFiles of them (see
// listLimit), in depth-first order with siblings by name.
func (s *tools) providerWalk(ctx context.Context, c *tool.Call, dir providerPath, recursive bool, maxFiles int64, keep func(store.Entry) bool) (tool.Reply, error) {
	e, err := dir.tree(c).Stat(ctx, dir.depot)
	if err != nil {
		return tool.Reply{}, providerStoreError(err, "Directory", dir)
	}
	if !e.IsDir() {
		return tool.Reply{}, providerStoreError(store.ErrNotDir, "Directory", dir)
	}
	limit := s.listLimit(maxFiles)
	paths := []string{}
	err = dir.tree(c).Walk(ctx, dir.depot, recursive, func(e store.Entry) (bool, error) {
		if keep(e) {
			if len(paths) >= limit {
				return false, tool.ErrStopWalk
			}
			paths = append(paths, dir.show(e.Path))
		}
		return true, nil
	})
	if err != nil {
		return tool.Reply{}, providerStoreError(err, "Directory", dir)
	}
	c.Attrs = append(c.Attrs, slog.Int("results", len(paths)))
	return tool.Reply{Data: paths}, nil
}

// listLimit is the number of entries a listing returns: the caller's
// limit when given (not 0), never more than Options.MaxListEntries.
func (s *tools) listLimit(n int64) int {
	if n <= 0 || n > int64(s.opts.MaxListEntries) {
		return s.opts.MaxListEntries
	}
	return int(n)
}
