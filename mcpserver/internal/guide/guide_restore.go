package guide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolRestore = "guide_restore"

// restore makes the version of a file at a revision, or in a snapshot,
// its current content again, as a new revision. The content is shared,
// not copied.
func (s *tools) restore(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		Path     string       `json:"path" args:"path"`
		Revision uint64       `json:"revision"`
		Snapshot snapshotName `json:"snapshot"`
	}
	err := args.Fill(raw, c.Args(), &a, func(o *args.Object) {
		if o.Has("revision") == o.Has("snapshot") {
			o.Problems().Addf("revision", "give exactly one of revision (guide_file_history lists them) or snapshot")
		}
	})
	p, rev, snapName := a.Path, a.Revision, string(a.Snapshot)
	c.Path = p
	if err != nil {
		return tool.Reply{}, err
	}
	from := "revision " + strconv.FormatUint(rev, 10)
	if snapName != "" {
		c.Attrs = append(c.Attrs, slog.String("snapshot", snapName))
		snap, err := c.Store().Snapshot(ctx, snapName)
		if errors.Is(err, store.ErrNotExist) {
			return tool.Reply{}, &tool.Refusal{Type: tool.ErrorNotFound,
				Message:     fmt.Sprintf("no snapshot named %s that you may read", snapName),
				Instruction: "guide_snapshot with action list shows the snapshots you may read; call again with one of their names. Nothing was changed."}
		}
		if err != nil {
			return tool.Reply{}, &tool.StoreError{Op: "snapshot " + snapName, Path: p, Err: err}
		}
		if !depotpath.Within(p, snap.Prefix) {
			return tool.Reply{}, args.Problem("path", "%s is not in snapshot %s, which holds %s", p, snapName, snap.Prefix)
		}
		rev, from = snap.Revision, "snapshot "+snapName
	}
	c.Attrs = append(c.Attrs, slog.Uint64("from_revision", rev))
	live, same, err := s.restoreTarget(ctx, c, p, rev)
	if err != nil {
		return tool.Reply{}, err
	}
	if snapName == "" {
		if err := s.checkKept(ctx, c, p, rev); err != nil {
			return tool.Reply{}, err
		}
	}
	if same {
		// Idempotent, as annotated: a second restore of the same version,
		// or of a version whose bytes and metadata are the live file's,
		// writes nothing.
		c.Status = "unchanged"
		c.Size, c.SHA256 = live.Size, live.SHA256
		data := s.fileData(store.PutResult{Status: store.StatusUnchanged, Entry: live}, "")
		return tool.Reply{
			Data:     data,
			Message:  fmt.Sprintf("%s already has the content of %s (%d bytes, revision %d): nothing was changed.", p, from, data.Size, data.Revision),
			Warnings: s.opts.MountWarnings(),
			Stats:    map[string]any{"revision": data.Revision, "from_revision": rev},
		}, nil
	}
	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	res, err := c.Store().Copy(ctx, store.CopyRequest{From: p, To: p, FromRevision: rev,
		Writer: c.Who().String(), Source: toolRestore + " " + from})
	if errors.Is(err, store.ErrNotExist) {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorNotFound,
			Message:     fmt.Sprintf("%s has no file at %s", p, from),
			Instruction: "guide_file_history lists the versions of the file that are kept; call again with one of their revisions. Nothing was changed."}
	}
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "restore", Path: p, Err: err}
	}
	put := store.PutResult{Status: res.Status, Entry: res.Entry}
	c.Status = "restored"
	c.Size, c.SHA256 = res.Entry.Size, res.Entry.SHA256
	warnings := append(s.opts.MountWarnings(), s.opts.WaitApplied(ctx, c, res.Entry.Revision)...)
	data := s.fileData(put, "")
	return tool.Reply{
		Data:     data,
		Message:  fmt.Sprintf("Restored %s from %s: %d bytes, now revision %d.", p, from, data.Size, data.Revision),
		Warnings: warnings,
		Stats:    map[string]any{"revision": data.Revision, "from_revision": rev},
	}, nil
}

// restoreTarget checks that p is a file at rev and not a directory now,
// and returns the live entry and whether
// it already has that version's content, mode and mtime.
func (s *tools) restoreTarget(ctx context.Context, c *tool.Call, p string, rev uint64) (store.Entry, bool, error) {
	ver, verr := c.Store().StatAt(ctx, p, rev)
	if verr != nil && !errors.Is(verr, store.ErrNotExist) && !errors.Is(verr, store.ErrIsDir) {
		return store.Entry{}, false, &tool.StoreError{Op: "stat", Path: p, Err: verr}
	}
	live, lerr := c.Store().Stat(ctx, p)
	if lerr != nil && !errors.Is(lerr, store.ErrNotExist) {
		return store.Entry{}, false, &tool.StoreError{Op: "stat", Path: p, Err: lerr}
	}
	// A directory is refused rather than restored as a tree: whether the
	// files added since should go is the agent's choice, not a default,
	// and the store keeps no earlier version of a directory itself.
	if verr == nil && ver.IsDir() || errors.Is(verr, store.ErrIsDir) || lerr == nil && live.IsDir() {
		return store.Entry{}, false, &tool.Refusal{Type: tool.ErrorValidation,
			Message:     fmt.Sprintf("%s is a directory: guide_restore restores only files", p),
			Instruction: "Call guide_restore once for each file below the directory that you want back, with the same revision or snapshot (a snapshot's tree is readable in the mount under /.snapshots/NAME). Nothing was changed."}
	}
	same := verr == nil && lerr == nil && ver.Present && live.Present && ver.SHA256 == live.SHA256 &&
		ver.Mode == live.Mode && ver.MTime.Equal(live.MTime)
	return live, same, nil
}

// checkKept refuses a revision that is not one of p's kept versions, with
// the ones that are.
func (s *tools) checkKept(ctx context.Context, c *tool.Call, p string, rev uint64) error {
	kept, err := c.Store().Kept(ctx, p)
	if err != nil {
		return &tool.StoreError{Op: "history", Path: p, Err: err}
	}
	if slices.Contains(kept, rev) {
		return nil
	}
	msg := fmt.Sprintf("revision %d of %s is not kept", rev, p)
	if len(kept) > 0 {
		msg += fmt.Sprintf(" (kept: %v)", kept)
	} else {
		msg += " (no version of it is kept)"
	}
	return &tool.Refusal{Type: tool.ErrorNotFound, Message: msg,
		Instruction: "Call again with a revision guide_file_history lists for this path. Nothing was changed."}
}
