package provider

import (
	"context"
	"encoding/json"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// fileStats is the reply of get_file_stats, as the contract defines it.
type fileStats struct {
	Path         string `json:"path"`
	FileType     string `json:"file_type"` // "file" or "directory"; the depot has no symlinks
	Size         int64  `json:"size"`
	ModifiedTime string `json:"modified_time"`
	IsReadable   bool   `json:"is_readable"`
	IsDirectory  bool   `json:"is_directory"`
	// Link, beyond the contract: the URL of the file's resource link
	// (this version, GET with the caller's credentials), over HTTP only.
	Link string `json:"link,omitempty"`
}

// providerFileStats is get_file_stats.
func (s *tools) providerFileStats(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	p, err := s.decodeStatArgs(c, raw)
	c.Path = p.depot
	if err != nil {
		return tool.Reply{}, err
	}
	if err := s.locate(ctx, c, &p, ""); err != nil {
		return tool.Reply{}, err
	}
	e, err := p.tree(c).Stat(ctx, p.depot)
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
	if e.Present {
		st.Link = c.Link(e)
	}
	return tool.Reply{Data: st}, nil
}

// decodeStatArgs reads the one argument of file_exists and get_file_stats.
func (s *tools) decodeStatArgs(c *tool.Call, raw json.RawMessage) (providerPath, error) {
	var a struct {
		Path string `json:"path" args:"path"`
	}
	err := args.Fill(raw, c.OwnArgs(), &a)
	return s.providerPath("path", a.Path), err
}
