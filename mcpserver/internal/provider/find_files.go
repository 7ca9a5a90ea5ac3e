package provider

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// providerFindFiles is find_files: the paths of the files below a
// directory (recursive by default) whose names match any of patterns.
func (s *tools) providerFindFiles(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		DirectoryPath string      `json:"directory_path" args:"path"`
		Patterns      []args.Glob `json:"patterns"`
		Recursive     bool        `json:"recursive"`
		MaxFiles      int64       `json:"max_files"`
	}
	err := args.Fill(raw, c.OwnArgs(), &a)
	dir := s.providerPath("directory_path", a.DirectoryPath)
	c.Path = dir.depot
	if err != nil {
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &dir, ""); err != nil {
		return tool.Reply{}, err
	}
	return s.providerWalk(ctx, c, dir, a.Recursive, a.MaxFiles, func(e store.Entry) bool {
		if e.IsDir() {
			return false
		}
		name := depotpath.Base(e.Path)
		return slices.ContainsFunc(a.Patterns, func(g args.Glob) bool { return g.Match(name) })
	})
}
