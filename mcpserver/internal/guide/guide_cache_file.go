package guide

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolCacheFile = "guide_cache_file"

// cacheFile stores one whole file.
func (s *tools) cacheFile(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a fileArgs
	err := args.Parse(raw, c.Args(), func(o *args.Object) {
		a = decodeFile(o, s.opts.MaxContentBytes)
		a.cond = tool.DecodeCondition(o)
	})
	c.Path = a.path
	if err != nil {
		return tool.Reply{}, err
	}
	return s.putFile(ctx, c, &a, toolCacheFile)
}

// putFile verifies and stores a whole file, waits until the mount shows it,
// and builds the reply. It is shared by guide_cache_file and the one-call
// form of guide_read_file.
func (s *tools) putFile(ctx context.Context, c *tool.Call, a *fileArgs, source string) (tool.Reply, error) {
	var probs args.Problems
	sum, ok := a.verify(&probs, "sha256")
	if !ok {
		return tool.Reply{}, probs.Err()
	}
	if err := a.place(s.opts.Uploads, sum); err != nil {
		return tool.Reply{}, err
	}
	c.Path, c.Size, c.SHA256 = a.path, int64(len(a.data)), sum
	if err := checkFileSize(a.path, int64(len(a.data)), s.opts.MaxFileBytes); err != nil {
		return tool.Reply{}, err
	}

	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	// Nothing after the write fails the call: its record can be written
	// while the write commits.
	c.RecordAtCommit()
	res, err := c.Store().Put(ctx, s.request(c, a, source, sum, a.data))
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "put", Path: a.path, Err: a.cond.Conflict(ctx, c.Store(), a.path, err)}
	}
	return s.stored(ctx, c, res, a.filename, int64(len(a.data))), nil
}

// stored is the reply of a completed whole-file write of received bytes,
// sent once the mount shows it: guide_cache_file's, guide_read_file's (of
// a whole file, or of the chunk that completes one) and a raw upload's.
func (s *tools) stored(ctx context.Context, c *tool.Call, res store.PutResult, filename string, received int64) tool.Reply {
	c.Status = res.Status.String()
	warnings := append(s.opts.MountWarnings(), s.opts.WaitApplied(ctx, c, res.Entry.Revision)...)
	warnings = append(warnings, evictionWarnings(res.Evicted)...)
	data := s.fileData(res, filename)
	stats := s.writeStats(ctx, c, res)
	stats["bytes_received"] = received
	return tool.Reply{
		Data:     data,
		Message:  s.storedMessage(data),
		Warnings: warnings,
		Stats:    stats,
	}
}

// writeStats are the envelope stats of a completed write: what the write
// did (its cache status, the entry's update counter, what it evicted) and
// the store's cache hits and misses so far. A failure to read the store's
// counters only leaves them out.
func (s *tools) writeStats(ctx context.Context, c *tool.Call, res store.PutResult) map[string]any {
	stats := map[string]any{
		"cache_status":  res.Status.String(),
		"updates":       res.Entry.Updates,
		"evicted_files": res.Evicted.Count,
		"evicted_bytes": res.Evicted.Bytes,
	}
	if res.Evicted.Count > 0 {
		c.Attrs = append(c.Attrs, slog.Int("evicted_files", res.Evicted.Count), slog.Int64("evicted_bytes", res.Evicted.Bytes))
	}
	st, err := c.Store().Stats(ctx)
	if err != nil {
		s.opts.Logger.Warn("store statistics unavailable for a reply", "tool", c.Name(), "err", err)
		return stats
	}
	stats["cache_hits"] = st.Hits
	stats["cache_misses"] = st.Misses
	return stats
}

// evictionWarnings tells the agent what a write evicted.
func evictionWarnings(ev store.Evictions) []string {
	if ev.Count == 0 {
		return nil
	}
	// Paths names at most store.MaxEvictedPaths files, and only those the
	// caller may read.
	list := strings.Join(ev.Paths, ", ")
	switch more := ev.Count - len(ev.Paths); {
	case more > 0 && list == "":
		list = fmt.Sprintf("%d not named here", more)
	case more > 0:
		list += fmt.Sprintf(" and %d more not named here", more)
	}
	return []string{fmt.Sprintf("To make room, %d file(s) (%d bytes) were evicted, least recently used first: %s. They stay listed as placeholders; a program that opens one waits while guide_pending_requests asks for it again.", ev.Count, ev.Bytes, list)}
}

// fileData describes a stored file for a reply.
func (s *tools) fileData(res store.PutResult, filename string) *fileData {
	e := res.Entry
	d := &fileData{
		Status:    res.Status.String(),
		Key:       e.Path,
		Path:      e.Path,
		MountPath: s.opts.MountPath(e.Path),
		SHA256:    e.SHA256,
		Size:      e.Size,
		Updates:   e.Updates,
		Revision:  e.Revision,
		MTime:     e.MTime.UTC().Format(time.RFC3339Nano),
		Mode:      args.FormatMode(e.Mode),
		Encoding:  e.Encoding,
		Filename:  filename,
		Pinned:    e.Pinned,
	}
	if !e.Expires.IsZero() {
		d.Expires = e.Expires.UTC().Format(time.RFC3339Nano)
	}
	if ev := res.Evicted; ev.Count > 0 {
		d.Evicted = &evictedData{Count: ev.Count, Bytes: ev.Bytes, Paths: append([]string{}, ev.Paths...)}
	}
	return d
}

// storedMessage is the reply message of a completed write.
func (s *tools) storedMessage(d *fileData) string {
	var what string
	switch d.Status {
	case store.StatusCreated.String():
		what = "Stored"
	case store.StatusUpdated.String():
		what = fmt.Sprintf("Updated (update %d)", d.Updates)
	default:
		what = "Already stored, unchanged:"
	}
	msg := fmt.Sprintf("%s %d bytes at %s.", what, d.Size, d.Path)
	if d.MountPath != "" {
		msg += " Programs on the host can read it at " + d.MountPath + "."
	}
	return msg
}
