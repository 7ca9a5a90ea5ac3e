package guide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolFileHistory = "guide_file_history"

// VersionInfo is one version of a file in the reply of guide_file_history.
// A plain value.
type VersionInfo struct {
	Revision uint64 `json:"revision"`
	Live     bool   `json:"live"`
	Present  bool   `json:"present"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256,omitempty"`
	MTime    string `json:"mtime"`
	Updated  string `json:"updated"`
	Writer   string `json:"writer,omitempty"`
	Source   string `json:"source,omitempty"`
}

// HistoryData is the reply data of guide_file_history.
type HistoryData struct {
	Path     string        `json:"path"`
	Versions []VersionInfo `json:"versions"`
}

// fileHistory lists the versions of a file the depot keeps, newest first.
func (s *tools) fileHistory(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		Path string `json:"path" args:"path"`
	}
	err := args.Fill(raw, c.Args(), &a)
	p := a.Path
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	live, err := c.Store().Stat(ctx, p)
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		return tool.Reply{}, &tool.StoreError{Op: "stat", Path: p, Err: err}
	}
	if err == nil && live.IsDir() {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorValidation,
			Message:     fmt.Sprintf("%s is a directory: guide_file_history lists the versions of one file", p),
			Instruction: "Call again with the path of a file below it (the mount, or a snapshot under /.snapshots/NAME, shows the directory's files). Nothing was changed."}
	}
	versions, herr := c.Store().History(ctx, p)
	if errors.Is(herr, store.ErrNotExist) {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorNotFound,
			Message:     fmt.Sprintf("%s has no history: no file was stored there, or none of its versions is kept any more", p),
			Instruction: "Check the path: send the depot path of a file (such as the path a guide_cache_file reply gave you). Nothing was changed."}
	}
	if herr != nil {
		return tool.Reply{}, &tool.StoreError{Op: "history", Path: p, Err: herr}
	}
	d := HistoryData{Path: p, Versions: make([]VersionInfo, 0, len(versions))}
	for _, e := range versions {
		d.Versions = append(d.Versions, VersionInfo{
			Revision: e.Revision, Live: err == nil && !live.IsDir() && e.Revision == live.Revision,
			Present: e.Present, Size: e.Size, SHA256: e.SHA256,
			MTime: e.MTime.UTC().Format(time.RFC3339Nano), Updated: e.Updated.UTC().Format(time.RFC3339Nano),
			Writer: e.Writer, Source: e.Source,
		})
	}
	c.Status = fmt.Sprintf("%d versions", len(d.Versions))
	msg := fmt.Sprintf("%s has %d kept version(s), newest first.", p, len(d.Versions))
	if len(d.Versions) > 0 && !d.Versions[0].Live {
		msg = fmt.Sprintf("%s no longer exists; %d earlier version(s) are kept, newest first.", p, len(d.Versions))
	}
	return tool.Reply{Data: d, Message: msg + " guide_restore makes one of them current again."}, nil
}
