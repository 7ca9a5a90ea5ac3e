package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
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
func (s *Server) fsList(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var dir string
	var pattern glob
	var recursive, hidden bool
	metadata := true
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		dir = fsPathArg(o, "path")
		pattern = globArg(o, "pattern")
		recursive = o.boolean("recursive", false)
		hidden = o.boolean("include_hidden", false)
		metadata = o.boolean("metadata", true)
		o.finish()
	}
	c.path = dir
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	e, err := c.store.Stat(ctx, dir)
	if err != nil {
		return reply{}, fsStoreError(err, dir)
	}
	if !e.IsDir() {
		return reply{}, fsStoreError(store.ErrNotDir, dir)
	}
	out := fsListReply{Entries: []fsEntry{}}
	err = s.walk(ctx, c, dir, recursive, func(e store.Entry) (bool, error) {
		name := depotpath.Base(e.Path)
		isHidden := strings.HasPrefix(name, ".")
		if isHidden && !hidden {
			return false, nil
		}
		if !pattern.match(name) {
			return true, nil
		}
		if len(out.Entries) >= s.opts.MaxListEntries {
			out.Truncated = true
			return false, errStopWalk
		}
		out.Entries = append(out.Entries, fsListEntry(e, name, isHidden, metadata))
		return true, nil
	})
	if err != nil {
		return reply{}, fsStoreError(err, dir)
	}
	c.attrs = append(c.attrs, slog.Int("results", len(out.Entries)))
	return reply{data: out}, nil
}

func fsListEntry(e store.Entry, name string, hidden, metadata bool) fsEntry {
	out := fsEntry{Name: name, Path: relPath(e.Path), Type: e.Kind.String(), IsHidden: hidden}
	if metadata {
		if !e.IsDir() {
			size := e.Size
			out.Size = &size
		}
		out.Modified = fsTime(entryTime(e))
	}
	return out
}

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
}

// fsPermissions says what can be done with an entry.
type fsPermissions struct {
	Readable   bool `json:"readable"`
	Writable   bool `json:"writable"`
	Executable bool `json:"executable"`
}

// fsInfo is info: what the depot knows of a path. A path with no entry is
// not an error: the reply says exists false.
func (s *Server) fsInfo(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var probs problems
	var p string
	if o := decodeObject(raw, "arguments", "", &probs); o != nil {
		p = fsPathArg(o, "path")
		o.finish()
	}
	c.path = p
	if err := probs.err(); err != nil {
		return reply{}, err
	}
	e, err := c.store.Stat(ctx, p)
	if err != nil {
		if !errors.Is(err, store.ErrNotExist) {
			return reply{}, fsStoreError(err, p)
		}
		return reply{data: fsInfoReply{Path: relPath(p), IsHidden: strings.HasPrefix(depotpath.Base(p), ".")}}, nil
	}
	name := depotpath.Base(p)
	modified := fsTime(entryTime(e))
	created := modified
	if !e.Created.IsZero() {
		created = fsTime(e.Created)
	}
	out := fsInfoReply{
		Exists:   true,
		Type:     e.Kind.String(),
		Name:     name,
		Path:     relPath(p),
		Created:  created,
		Modified: modified,
		// The depot does not record reads: accessed is the last change.
		Accessed: fsTime(fsChanged(e)),
		Permissions: &fsPermissions{
			Readable:   e.IsDir() || e.Present,
			Writable:   true,
			Executable: e.IsDir() || e.Mode&0o111 != 0,
		},
		IsHidden:  strings.HasPrefix(name, "."),
		SHA256:    e.SHA256,
		Mode:      formatMode(e.Mode),
		MountPath: s.mountPath(p),
	}
	if !e.IsDir() {
		out.Size = e.Size
	}
	return reply{data: out}, nil
}

// fsChanged is the last change of e: its update time, else its mtime.
func fsChanged(e store.Entry) time.Time {
	if !e.Updated.IsZero() {
		return e.Updated
	}
	return entryTime(e)
}
