package guide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolSnapshot = "guide_snapshot"

// maxSnapshotName is the longest snapshot name, in bytes.
const maxSnapshotName = 64

// SnapshotInfo is one snapshot in a guide_snapshot reply. It is exported
// so that "depotfs snapshot" can decode the reply into it. A plain value.
type SnapshotInfo struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	Revision  uint64 `json:"revision"`
	Created   string `json:"created"`
	Expires   string `json:"expires,omitempty"`
	Yours     bool   `json:"yours"`
	MountPath string `json:"mount_path,omitempty"`
}

// SnapshotData is the reply data of guide_snapshot: the snapshot created
// or deleted, or those listed.
type SnapshotData struct {
	Snapshots []SnapshotInfo `json:"snapshots"`
}

// snapshotArgs are guide_snapshot's arguments.
type snapshotArgs struct {
	Action     snapshotAction `json:"action"`
	Name       snapshotName   `json:"name"`
	Path       string         `json:"path" args:"path"`
	TTLSeconds int64          `json:"ttl_seconds"`
}

// snapshotAction is guide_snapshot's action, refused by a message that
// lists the actions when it is missing.
type snapshotAction string

// DecodeArg reads field into a.
func (a *snapshotAction) DecodeArg(o *args.Object, field string, _ bool) {
	if !o.Has(field) {
		o.Problems().Addf(field, "required: create, list or delete")
	}
	*a = snapshotAction(o.Choice(field, ""))
}

// snapshotName is a snapshot name argument (see checkSnapshotName); a
// refused name is kept, for the log.
type snapshotName string

// ParseArg sets n from s, refusing what cannot name a snapshot.
func (n *snapshotName) ParseArg(s string) error {
	*n = snapshotName(s)
	if err := checkSnapshotName(s); err != nil {
		return fmt.Errorf("%w: %v", args.ErrInvalid, err)
	}
	return nil
}

// checkSnapshotName returns an error unless name can name a snapshot: 1 to
// 64 bytes of [A-Za-z0-9._-], not "." or "..".
func checkSnapshotName(name string) error {
	if name == "" || len(name) > maxSnapshotName || name == "." || name == ".." || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Errorf("expected 1 to %d characters from A-Z a-z 0-9 . _ - (not . or ..), got %s", maxSnapshotName, args.Quote(name))
	}
	return nil
}

// decodeSnapshot reads guide_snapshot's arguments.
func (s *tools) decodeSnapshot(c *tool.Call, raw json.RawMessage) (snapshotArgs, error) {
	var a snapshotArgs
	err := args.Fill(raw, c.Args(), &a, func(o *args.Object) {
		probs := o.Problems()
		if !o.Has("name") && (a.Action == "create" || a.Action == "delete") {
			probs.Addf("name", "required to %s a snapshot", a.Action)
		}
		if a.Action != "create" {
			for _, f := range []string{"path", "ttl_seconds"} {
				if o.Has(f) {
					probs.Addf(f, "taken only by action create")
				}
			}
		}
	})
	return a, err
}

// snapshot creates, lists or deletes snapshots.
func (s *tools) snapshot(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	a, err := s.decodeSnapshot(c, raw)
	c.Path = a.Path
	if err != nil {
		return tool.Reply{}, err
	}
	if a.Name != "" {
		c.Attrs = append(c.Attrs, slog.String("snapshot", string(a.Name)))
	}
	switch a.Action {
	case "create":
		return s.createSnapshot(ctx, c, a)
	case "delete":
		return s.deleteSnapshot(ctx, c, string(a.Name))
	}
	return s.listSnapshots(ctx, c)
}

func (s *tools) createSnapshot(ctx context.Context, c *tool.Call, a snapshotArgs) (tool.Reply, error) {
	req := store.SnapshotRequest{Name: string(a.Name), Prefix: a.Path}
	if a.TTLSeconds > 0 {
		req.Expires = s.opts.Now().Add(time.Duration(a.TTLSeconds) * time.Second)
	}
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	snap, err := c.Store().CreateSnapshot(ctx, req)
	if errors.Is(err, store.ErrExist) {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorConflict,
			Message:     fmt.Sprintf("a snapshot named %s already exists", a.Name),
			Instruction: "Choose another name, or delete the existing snapshot first (action delete) if you mean to replace it; action list shows the snapshots. Nothing was changed."}
	}
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "create snapshot " + string(a.Name), Path: shownDir(a.Path), Err: err}
	}
	c.Status = "created"
	info := s.snapshotInfo(c, snap)
	msg := fmt.Sprintf("Snapshot %s holds %s as of revision %d. Read it with snapshot %q and a path below %s on the read and list tools (read_file, list_directory; read, list), or at %s/%s/..., or a file below it as the resource depot:///PATH?revision=%d",
		info.Name, snap.Prefix, snap.Revision, info.Name, snap.Prefix, store.SnapshotsDir, info.Name, snap.Revision)
	if info.MountPath != "" {
		msg += "; programs read it at " + info.MountPath
	}
	return tool.Reply{Data: SnapshotData{Snapshots: []SnapshotInfo{info}},
		Message: msg + ". Its content counts against the depot's size and is never evicted until you delete it.",
		Stats:   map[string]any{"revision": snap.Revision}}, nil
}

func (s *tools) deleteSnapshot(ctx context.Context, c *tool.Call, name string) (tool.Reply, error) {
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	snap, err := c.Store().DeleteSnapshot(ctx, name)
	if errors.Is(err, store.ErrNotExist) {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorNotFound,
			Message:     fmt.Sprintf("no snapshot named %s that you may delete", name),
			Instruction: "guide_snapshot with action list shows the snapshots you may read; call again with one of their names. Nothing was changed."}
	}
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "delete snapshot " + name, Path: store.SnapshotsDir, Err: err}
	}
	c.Path = snap.Prefix
	c.Status = "deleted"
	// The mount forgets the snapshot's name before the reply: a program
	// that reads it after the reply gets ENOENT, not a second of its tree.
	var warnings []string
	if rev, err := c.Store().Revision(ctx); err == nil {
		warnings = s.opts.WaitApplied(ctx, c, rev)
	}
	return tool.Reply{Data: SnapshotData{Snapshots: []SnapshotInfo{s.snapshotInfo(c, snap)}},
		Message:  fmt.Sprintf("Snapshot %s is deleted; the content only it held is freed.", name),
		Warnings: warnings}, nil
}

func (s *tools) listSnapshots(ctx context.Context, c *tool.Call) (tool.Reply, error) {
	all, err := c.Store().Snapshots(ctx)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "list snapshots", Path: store.SnapshotsDir, Err: err}
	}
	d := SnapshotData{Snapshots: make([]SnapshotInfo, len(all))}
	for i, snap := range all {
		d.Snapshots[i] = s.snapshotInfo(c, snap)
	}
	c.Status = fmt.Sprintf("%d snapshots", len(d.Snapshots))
	return tool.Reply{Data: d, Message: fmt.Sprintf("%d snapshot(s) you may read.", len(d.Snapshots))}, nil
}

// snapshotInfo is snap as the caller sees it.
func (s *tools) snapshotInfo(c *tool.Call, snap store.Snapshot) SnapshotInfo {
	info := SnapshotInfo{Name: c.Store().SnapshotName(snap.Name), Path: snap.Prefix, Revision: snap.Revision,
		Created: snap.Created.UTC().Format(time.RFC3339Nano), Yours: snap.Writer == c.Tenant(),
		MountPath: s.opts.MountPath(path.Join(store.SnapshotsDir, snap.Name))}
	if !snap.Expires.IsZero() {
		info.Expires = snap.Expires.UTC().Format(time.RFC3339Nano)
	}
	return info
}
