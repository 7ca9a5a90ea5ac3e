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
	p, err := s.decodeStatArgs(raw)
	c.Path = p.depot
	switch {
	case err != nil && !errors.Is(err, args.ErrInvalid):
		// Only the path was refused (invalid or leaving the depot): no
		// such path can exist.
		return tool.Reply{Data: false}, nil
	case err != nil:
		return tool.Reply{}, err
	}
	_, err = c.Store().Stat(ctx, p.depot)
	return tool.Reply{Data: err == nil}, nil
}

// fileStats is the reply of get_file_stats, as the contract defines it.
type fileStats struct {
	Path         string `json:"path"`
	FileType     string `json:"file_type"` // "file" or "directory"; the depot has no symlinks
	Size         int64  `json:"size"`
	ModifiedTime string `json:"modified_time"`
	IsReadable   bool   `json:"is_readable"`
	IsDirectory  bool   `json:"is_directory"`
}

// providerFileStats is get_file_stats.
func (s *tools) providerFileStats(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	p, err := s.decodeStatArgs(raw)
	c.Path = p.depot
	if err != nil {
		return tool.Reply{}, err
	}
	e, err := c.Store().Stat(ctx, p.depot)
	if err != nil {
		return tool.Reply{}, providerStoreError(err, "Path", p)
	}
	st := fileStats{
		Path:         p.show(e.Path),
		FileType:     e.Kind.String(),
		ModifiedTime: isoTime(tool.EntryTime(e)),
		IsReadable:   e.IsDir() || e.Present,
		IsDirectory:  e.IsDir(),
	}
	if !e.IsDir() {
		st.Size = e.Size
	}
	return tool.Reply{Data: st}, nil
}

// decodeStatArgs reads the one argument of file_exists and get_file_stats.
func (s *tools) decodeStatArgs(raw json.RawMessage) (providerPath, error) {
	var probs args.Problems
	var p providerPath
	if o := args.Decode(raw, "arguments", "", &probs); o != nil {
		p = s.providerPathArg(o, "path")
		o.Finish()
	}
	return p, probs.Err()
}
