package fstools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// fsInfoReply is the reply of info.
type fsInfoReply struct {
	Exists      bool           `json:"exists"`
	Type        string         `json:"type,omitempty"`
	Name        string         `json:"name,omitempty"`
	Path        string         `json:"path"`
	Size        int64          `json:"size"`
	Created     string         `json:"created,omitempty"`
	Modified    string         `json:"modified,omitempty"`
	Accessed    string         `json:"accessed,omitempty"`
	Permissions *fsPermissions `json:"permissions,omitempty"`
	IsHidden    bool           `json:"is_hidden"`
	// Beyond the contract: the content's SHA-256, the mode pushed, and
	// where programs on the host read the entry.
	SHA256    string `json:"sha256,omitempty"`
	Mode      string `json:"mode,omitempty"`
	MountPath string `json:"mount_path,omitempty"`
	// Revision is the store revision of the entry's last change, what
	// write's if_revision compares; 0 when the path has no entry.
	Revision uint64 `json:"revision,omitempty"`
	// Link is the URL of the file's resource link (this version, read
	// with GET and the caller's credentials), over HTTP only.
	Link string `json:"link,omitempty"`
}

// fsPermissions says what can be done with an entry.
type fsPermissions struct {
	Readable   bool `json:"readable"`
	Writable   bool `json:"writable"`
	Executable bool `json:"executable"`
}

// fsInfo is info: what the depot knows of a path. A path with no entry is
// not an error: the reply says exists false.
func (s *tools) fsInfo(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a := struct {
		Path     fsPath            `json:"path"`
		Snapshot tool.SnapshotName `json:"snapshot"`
	}{Path: s.path()}
	err := args.Fill(raw, c.OwnArgs(), &a)
	p := a.Path.p
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	pl, err := c.Store().Locate(ctx, "path", p, string(a.Snapshot))
	if err != nil {
		return tool.Reply{}, err
	}
	p, c.Path = pl.Path, pl.Path
	shown := relPath(pl.Show(p))
	e, err := c.Store().Tree(pl).Stat(ctx, p)
	if err != nil {
		if !errors.Is(err, store.ErrNotExist) {
			return tool.Reply{}, fsStoreError(err, p)
		}
		return tool.Reply{Data: fsInfoReply{Path: shown, IsHidden: strings.HasPrefix(depotpath.Base(p), ".")}}, nil
	}
	name := depotpath.Base(p)
	modified := fsTime(tool.EntryTime(e))
	created, accessed := modified, tool.EntryTime(e)
	if !e.Created.IsZero() {
		created = fsTime(e.Created)
	}
	if !e.Updated.IsZero() {
		accessed = e.Updated
	}
	out := fsInfoReply{
		Exists:   true,
		Type:     e.Kind.String(),
		Name:     name,
		Path:     shown,
		Created:  created,
		Modified: modified,
		// The depot does not record reads: accessed is the last change
		// (its update, else its mtime).
		Accessed: fsTime(accessed),
		Permissions: &fsPermissions{
			Readable:   e.IsDir() || e.Present,
			Writable:   pl.Snap == nil, // a snapshot's tree is read-only
			Executable: e.IsDir() || e.Mode&0o111 != 0,
		},
		IsHidden:  strings.HasPrefix(name, "."),
		SHA256:    e.SHA256,
		Mode:      args.FormatMode(e.Mode),
		MountPath: s.opts.MountPath(pl.MountShown(p)),
		Revision:  e.Revision,
	}
	if !e.IsDir() {
		out.Size = e.Size
	}
	if e.Present {
		out.Link = c.Link(e)
	}
	return tool.Reply{Data: out}, nil
}
