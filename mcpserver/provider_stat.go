package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
)

// providerFileExists is file_exists: whether a file or directory exists at
// path. As its contract says, it does not fail: a path that cannot exist
// (outside the depot, invalid) is false too. Only a malformed call (path
// missing, not a string, unknown arguments) is an error.
func (s *Server) providerFileExists(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	p, err := s.decodeStatArgs(raw)
	c.path = p.depot
	switch {
	case err != nil && !errors.Is(err, errArgs):
		// Only the path was refused (invalid or leaving the depot): no
		// such path can exist.
		return reply{data: false}, nil
	case err != nil:
		return reply{}, err
	}
	_, err = c.store.Stat(ctx, p.depot)
	return reply{data: err == nil}, nil
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
func (s *Server) providerFileStats(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	p, err := s.decodeStatArgs(raw)
	c.path = p.depot
	if err != nil {
		return reply{}, err
	}
	e, err := c.store.Stat(ctx, p.depot)
	if err != nil {
		return reply{}, providerStoreError(err, "Path", p)
	}
	st := fileStats{
		Path:         p.show(e.Path),
		FileType:     e.Kind.String(),
		ModifiedTime: isoTime(entryTime(e)),
		IsReadable:   e.IsDir() || e.Present,
		IsDirectory:  e.IsDir(),
	}
	if !e.IsDir() {
		st.Size = e.Size
	}
	return reply{data: st}, nil
}

// decodeStatArgs reads the one argument of file_exists and get_file_stats.
func (s *Server) decodeStatArgs(raw json.RawMessage) (providerPath, error) {
	var probs problems
	var p providerPath
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		p = s.providerPathArg(o, "path")
		o.finish()
	}
	return p, probs.err()
}
