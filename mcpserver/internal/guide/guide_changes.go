package guide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/depotfs/depotfs/feed"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

const toolChanges = "guide_changes"

// changes is the long-poll door of the change feed: the changes below
// prefix after since, waiting up to wait_ms for a first one.
func (s *tools) changes(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		Prefix changesPrefix `json:"prefix"`
		Since  *uint64       `json:"since"`
		WaitMS int64         `json:"wait_ms"`
		Max    int           `json:"max"`
	}
	err := args.Fill(raw, c.Args(), &a)
	req := feed.Request{Prefix: string(a.Prefix), Wait: time.Duration(a.WaitMS) * time.Millisecond, Max: a.Max}
	sinceSet := a.Since != nil
	if sinceSet {
		req.Since = *a.Since
	}
	c.Path = req.Prefix
	if err != nil {
		return tool.Reply{}, err
	}
	if !sinceSet {
		rev, err := c.Store().Revision(ctx)
		if err != nil {
			return tool.Reply{}, &tool.StoreError{Op: "revision", Path: req.Prefix, Err: err}
		}
		req.Since = rev
	}
	// A long poll ends when the server closes, as guide_pending_requests
	// does, so a shutdown does not wait it out.
	pollCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.pending.Closing(), cancel)()
	start := time.Now()
	page, err := c.Store().Changes(pollCtx, req)
	if errors.Is(err, feed.ErrCursor) {
		return tool.Reply{}, &tool.Refusal{Type: tool.ErrorValidation, Message: "since: " + err.Error(),
			Instruction: "Pass a cursor a reply of guide_changes gave (its data.cursor), or leave since out to start from now."}
	}
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "changes", Path: req.Prefix, Err: err}
	}
	waited := time.Since(start)
	c.Status = strconv.Itoa(len(page.Changes))
	c.Attrs = append(c.Attrs, slog.Uint64("since", req.Since), slog.Uint64("cursor", page.Cursor), slog.Duration("waited", waited))
	var msg string
	switch {
	case page.Resync:
		msg = fmt.Sprintf("Changes after revision %d are no longer kept (the oldest kept is %d): treat everything below %s as changed (list or read it again), then call again with since %d.", req.Since, page.Oldest, req.Prefix, page.Cursor)
	case len(page.Changes) == 0:
		msg = fmt.Sprintf("No change below %s after revision %d (waited %d ms). Call again with since %d and wait_ms to wait for the next.", req.Prefix, req.Since, waited.Milliseconds(), page.Cursor)
	case page.More:
		msg = fmt.Sprintf("%d change(s) below %s; more follow: call again at once with since %d.", len(page.Changes), req.Prefix, page.Cursor)
	default:
		msg = fmt.Sprintf("%d change(s) below %s, oldest first. Call again with since %d for the next.", len(page.Changes), req.Prefix, page.Cursor)
	}
	return tool.Reply{
		Data:    page,
		Message: msg,
		Stats:   map[string]any{"changes": len(page.Changes), "waited_ms": waited.Milliseconds()},
	}, nil
}

// changesPrefix is guide_changes' prefix argument: a clean depot path.
type changesPrefix string

// ParseArg sets p from s, the path cleaned.
func (p *changesPrefix) ParseArg(s string) error {
	clean, err := depotpath.Clean(s)
	*p = changesPrefix(clean)
	if err != nil {
		return fmt.Errorf("%w (a depot path such as /src)", err)
	}
	return nil
}
