package guide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

const toolPendingRequests = "guide_pending_requests"

// pendingRequests lists the pending requests, waiting up to wait_seconds
// for a new one when there is none.
func (s *tools) pendingRequests(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		WaitSeconds int64   `json:"wait_seconds"`
		Cursor      *string `json:"cursor"`
	}
	var after uint64 // only requests with a greater ID count as new
	var foreign bool // the cursor came from another run of depotfs
	err := args.Fill(raw, c.OwnArgs(), &a, func(o *args.Object) {
		if a.Cursor != nil {
			var err error
			if after, foreign, err = s.pending.ParseCursor(*a.Cursor); err != nil {
				o.Problems().Add("cursor", err)
			}
		}
	})
	wait := time.Duration(a.WaitSeconds) * time.Second
	if err != nil {
		return tool.Reply{}, err
	}

	start := time.Now()
	data := s.pending.Wait(ctx, c.MayWrite, after, wait)
	waited := time.Since(start)
	c.Status = strconv.Itoa(data.Count)
	c.Attrs = append(c.Attrs, slog.Int("new", data.New), slog.Duration("waited", waited))

	var warnings []string
	if foreign {
		warnings = append(warnings, "The cursor comes from an earlier run of depotfs, so every pending request counts as new; use the cursor of this reply from now on.")
	}
	if s.pending.Broker() == nil {
		warnings = append(warnings, "depotfs is not mounted here, so no program can ask for a file: the list is always empty.")
	}
	var msg string
	if data.Count == 0 {
		msg = fmt.Sprintf("No program is waiting for a file (waited %.0f s). Call again with the cursor and wait_seconds to wait for the next request.", waited.Seconds())
	} else {
		msg = fmt.Sprintf("%d file(s) are wanted by programs on the host (%d new since the cursor): send their content at their paths, several in one guide_cache_files (a program that opens one file of a directory asks for all its placeholders), or one by one with guide_cache_file or guide_read_file; a program waits at most %.0f s before it gets an I/O error.",
			data.Count, data.New, data.FetchTimeoutSeconds)
	}
	return tool.Reply{
		Data:     data,
		Message:  msg,
		Warnings: warnings,
		Stats: map[string]any{
			"pending":   data.Count,
			"new":       data.New,
			"waited_ms": waited.Milliseconds(),
		},
	}, nil
}
