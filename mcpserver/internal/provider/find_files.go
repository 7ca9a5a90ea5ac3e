package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// providerFindFiles is find_files: the paths of the files below a
// directory (recursive by default) whose names match any of patterns.
func (s *tools) providerFindFiles(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var dir providerPath
	var patterns []args.Glob
	var maxFiles int64
	recursive := true
	err := args.Parse(raw, c.OwnArgs(), func(o *args.Object) {
		dir = s.providerPathArg(o, "directory_path")
		if elems, ok := o.Array("patterns", true); ok {
			for i, el := range elems {
				field := fmt.Sprintf("patterns[%d]", i)
				if args.JSONType(el) != "string" {
					o.Problems().Addf(field, "expected a string, got %s", args.JSONType(el))
					continue
				}
				p, err := args.DecodeString(el)
				if err == nil {
					var g args.Glob
					if g, err = args.ParseGlob(p); err == nil {
						patterns = append(patterns, g)
						continue
					}
				}
				o.Problems().Add(field, err)
			}
		}
		recursive = o.Bool("recursive", true)
		maxFiles = o.Count("max_files", 0)
	})
	c.Path = dir.depot
	if err != nil {
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &dir, ""); err != nil {
		return tool.Reply{}, err
	}
	return s.providerWalk(ctx, c, dir, recursive, maxFiles, func(e store.Entry) bool {
		if e.IsDir() {
			return false
		}
		name := depotpath.Base(e.Path)
		return slices.ContainsFunc(patterns, func(g args.Glob) bool { return g.Match(name) })
	})
}
