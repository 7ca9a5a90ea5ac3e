package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// providerListDirectory is list_directory: the paths of a directory's
// entries, files and directories, matching pattern; with recursive, of
// every entry below it (pattern matching names at any depth).
func (s *Server) providerListDirectory(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var dir providerPath
	var pattern glob
	var recursive bool
	var maxFiles int64
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		dir = s.providerPathArg(o, "directory_path")
		pattern = globArg(o, "pattern")
		recursive = o.boolean("recursive", false)
		maxFiles = providerSize(o, "max_files")
		o.finish()
	}
	c.path = dir.depot
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	paths, err := s.providerWalk(ctx, c, dir, recursive, s.listLimit(maxFiles), func(e store.Entry) bool {
		return pattern.match(depotpath.Base(e.Path))
	})
	if err != nil {
		return reply{}, err
	}
	c.attrs = append(c.attrs, slog.Int("results", len(paths)))
	return reply{data: paths}, nil
}

// providerFindFiles is find_files: the paths of the files below a
// directory (recursive by default) whose names match any of patterns.
func (s *Server) providerFindFiles(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var dir providerPath
	var patterns []glob
	var maxFiles int64
	recursive := true
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		dir = s.providerPathArg(o, "directory_path")
		if elems, ok := o.array("patterns", true); ok {
			for i, el := range elems {
				field := fmt.Sprintf("patterns[%d]", i)
				if jsonType(el) != "string" {
					o.probs.addf(field, "expected a string, got %s", jsonType(el))
					continue
				}
				p, err := decodeString(el)
				if err == nil {
					var g glob
					if g, err = parseGlob(p); err == nil {
						patterns = append(patterns, g)
						continue
					}
				}
				o.probs.add(field, err)
			}
		}
		recursive = o.boolean("recursive", true)
		maxFiles = providerSize(o, "max_files")
		o.finish()
	}
	c.path = dir.depot
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	paths, err := s.providerWalk(ctx, c, dir, recursive, s.listLimit(maxFiles), func(e store.Entry) bool {
		if e.IsDir() {
			return false
		}
		name := depotpath.Base(e.Path)
		for _, g := range patterns {
			if g.match(name) {
				return true
			}
		}
		return false
	})
	if err != nil {
		return reply{}, err
	}
	c.attrs = append(c.attrs, slog.Int("results", len(paths)))
	return reply{data: paths}, nil
}

// providerWalk returns, as the caller names them, the paths of the entries
// below dir that keep accepts, at most limit of them, in depth-first order
// with siblings by name.
func (s *Server) providerWalk(ctx context.Context, c *call, dir providerPath, recursive bool, limit int, keep func(store.Entry) bool) ([]string, error) {
	e, err := c.store.Stat(ctx, dir.depot)
	if err != nil {
		return nil, providerStoreError(err, "Directory", dir)
	}
	if !e.IsDir() {
		return nil, providerNotDir(dir)
	}
	paths := []string{}
	err = s.walk(ctx, c, dir.depot, recursive, func(e store.Entry) (bool, error) {
		if keep(e) {
			if len(paths) >= limit {
				return false, errStopWalk
			}
			paths = append(paths, dir.show(e.Path))
		}
		return true, nil
	})
	if err != nil {
		return nil, providerStoreError(err, "Directory", dir)
	}
	return paths, nil
}

// listLimit is the number of entries a listing returns: the caller's
// limit when given (not 0), never more than Options.MaxListEntries.
func (s *Server) listLimit(n int64) int {
	if n <= 0 || n > int64(s.opts.MaxListEntries) {
		return s.opts.MaxListEntries
	}
	return int(n)
}

// globArg reads an optional fnmatch pattern argument; absent, it matches
// everything.
func globArg(o *object, field string) glob {
	s, ok := o.str(field, false)
	if !ok {
		return glob{}
	}
	g, err := parseGlob(s)
	if err != nil {
		o.probs.add(o.name(field), err)
	}
	return g
}
