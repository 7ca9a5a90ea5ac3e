package fstools

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsEntry is one entry of a list reply.
type fsEntry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     *int64 `json:"size,omitempty"`
	Modified string `json:"modified,omitempty"`
	IsHidden bool   `json:"is_hidden"`
}

// fsListReply is the reply of list.
type fsListReply struct {
	Entries []fsEntry `json:"entries"`
	// Truncated reports that the listing stopped at Options.MaxListEntries.
	Truncated bool `json:"truncated"`
}

// fsList is list: the entries of a directory whose names match pattern;
// with recursive, every entry below it. Hidden entries (names starting
// with ".") and what is below hidden directories are left out unless
// include_hidden.
func (s *tools) fsList(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a := struct {
		Path          fsPath            `json:"path"`
		Pattern       args.Glob         `json:"pattern"`
		Recursive     bool              `json:"recursive"`
		IncludeHidden bool              `json:"include_hidden"`
		Metadata      bool              `json:"metadata"`
		Snapshot      tool.SnapshotName `json:"snapshot"`
	}{Path: s.path()}
	err := args.Fill(raw, c.OwnArgs(), &a)
	dir := a.Path.p
	c.Path = dir
	if err != nil {
		return tool.Reply{}, err
	}
	pl, err := c.Store().Locate(ctx, "path", dir, string(a.Snapshot))
	if err != nil {
		return tool.Reply{}, err
	}
	dir, c.Path = pl.Path, pl.Path
	tree := c.Store().Tree(pl)
	e, err := tree.Stat(ctx, dir)
	if err != nil {
		return tool.Reply{}, fsStoreError(err, dir)
	}
	if !e.IsDir() {
		return tool.Reply{}, fsStoreError(store.ErrNotDir, dir)
	}
	out := fsListReply{Entries: []fsEntry{}}
	err = tree.Walk(ctx, dir, a.Recursive, func(e store.Entry) (bool, error) {
		name := depotpath.Base(e.Path)
		isHidden := strings.HasPrefix(name, ".")
		if isHidden && !a.IncludeHidden {
			return false, nil
		}
		if !a.Pattern.Match(name) {
			return true, nil
		}
		if len(out.Entries) >= s.opts.MaxListEntries {
			out.Truncated = true
			return false, tool.ErrStopWalk
		}
		out.Entries = append(out.Entries, fsListEntry(e, relPath(pl.Show(e.Path)), isHidden, a.Metadata))
		return true, nil
	})
	if err != nil {
		return tool.Reply{}, fsStoreError(err, dir)
	}
	c.Attrs = append(c.Attrs, slog.Int("results", len(out.Entries)))
	return tool.Reply{Data: out}, nil
}

// fsListEntry is entry e of a listing, shown at path (relative).
func fsListEntry(e store.Entry, path string, hidden, metadata bool) fsEntry {
	out := fsEntry{Name: depotpath.Base(e.Path), Path: path, Type: e.Kind.String(), IsHidden: hidden}
	if metadata {
		if !e.IsDir() {
			size := e.Size
			out.Size = &size
		}
		out.Modified = fsTime(tool.EntryTime(e))
	}
	return out
}
