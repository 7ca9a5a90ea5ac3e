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
	var p, snapName string
	var rev uint64
	err := args.Parse(raw, c.Args(), func(o *args.Object) {
		p, _ = o.DepotPath("path", true)
		rev = uint64(o.Count("revision", 0, 1, args.MaxExactInteger))
		if n, ok := o.Str("snapshot", false); ok {
			if err := checkSnapshotName(n); err != nil {
				o.Problems().Addf("snapshot", "%v", err)
			}
			snapName = n
		}
		if o.Has("revision") == o.Has("snapshot") {
			o.Problems().Addf("revision", "give exactly one of revision (guide_file_history lists them) or snapshot")
		}
	})
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
	} else if err := s.checkKept(ctx, c, p, rev); err != nil {
		return tool.Reply{}, err
	}
	c.Attrs = append(c.Attrs, slog.Uint64("from_revision", rev))
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

// checkKept refuses a revision that is not one of p's kept versions, with
// the ones that are.
func (s *tools) checkKept(ctx context.Context, c *tool.Call, p string, rev uint64) error {
	versions, err := c.Store().History(ctx, p)
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		return &tool.StoreError{Op: "history", Path: p, Err: err}
	}
	if slices.ContainsFunc(versions, func(e store.Entry) bool { return e.Revision == rev }) {
		return nil
	}
	kept := make([]string, len(versions))
	for i, e := range versions {
		kept[i] = strconv.FormatUint(e.Revision, 10)
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
