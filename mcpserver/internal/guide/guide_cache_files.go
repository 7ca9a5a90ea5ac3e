package guide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolCacheFiles = "guide_cache_files"

// batchData is the reply data of guide_cache_files: each file as
// guide_cache_file describes it, in the order sent, and the totals.
type batchData struct {
	Files    []*fileData `json:"files"`
	Totals   batchTotals `json:"totals"`
	Revision uint64      `json:"revision"`
}

// batchTotals count what one guide_cache_files call did.
type batchTotals struct {
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
	Created      int   `json:"created"`
	Updated      int   `json:"updated"`
	Unchanged    int   `json:"unchanged"`
	EvictedFiles int   `json:"evicted_files"`
	EvictedBytes int64 `json:"evicted_bytes"`
}

// cacheFiles stores many whole files in one atomic change: every entry is
// decoded and checked as guide_cache_file checks its arguments, then all
// are written in one store transaction, or none.
func (s *tools) cacheFiles(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	probs := c.Args()
	var files []fileArgs
	if o := c.Decode(raw); o != nil {
		elems, ok := o.Array("files", true)
		o.Finish()
		if ok {
			files = s.decodeBatch(elems, probs)
		}
	}
	if len(files) > 0 {
		c.Path = files[0].path
	}
	if err := probs.Err(); err != nil {
		return tool.Reply{}, err
	}
	reqs, err := s.batchRequests(c, files)
	if err != nil {
		return tool.Reply{}, err
	}

	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	res, err := c.Store().PutBatch(ctx, reqs)
	if err != nil {
		var be *store.BatchError
		if errors.As(err, &be) {
			cerr := files[be.Index].cond.Conflict(ctx, c.Store(), be.Path, be.Err)
			return tool.Reply{}, &tool.StoreError{Op: "put", Path: be.Path, Err: fmt.Errorf("files[%d]: %w", be.Index, cerr)}
		}
		return tool.Reply{}, &tool.StoreError{Op: "put", Path: c.Path, Err: err}
	}
	names := make([]string, len(files))
	for i := range files {
		names[i] = files[i].filename
	}
	return s.batchReply(ctx, c, res, names), nil
}

// batchReply is the reply of files stored in one change (filenames[i] is
// file i's filename, "" for a path), sent once the mount shows them all:
// guide_cache_files' and an archive upload's.
func (s *tools) batchReply(ctx context.Context, c *tool.Call, res []store.PutResult, filenames []string) tool.Reply {
	d := &batchData{Files: make([]*fileData, len(res))}
	var ev store.Evictions
	for i, r := range res {
		d.Files[i] = s.fileData(r, filenames[i])
		d.Revision = max(d.Revision, r.Entry.Revision)
		t := &d.Totals
		t.Files++
		t.Bytes += r.Entry.Size
		switch r.Status {
		case store.StatusCreated:
			t.Created++
		case store.StatusUpdated:
			t.Updated++
		default:
			t.Unchanged++
		}
		ev.Count += r.Evicted.Count
		ev.Bytes += r.Evicted.Bytes
		ev.Paths = append(ev.Paths, r.Evicted.Paths[:min(len(r.Evicted.Paths), store.MaxEvictedPaths-len(ev.Paths))]...)
	}
	d.Totals.EvictedFiles, d.Totals.EvictedBytes = ev.Count, ev.Bytes
	c.Size = d.Totals.Bytes
	c.Status = fmt.Sprintf("%d created, %d updated, %d unchanged", d.Totals.Created, d.Totals.Updated, d.Totals.Unchanged)
	c.Attrs = append(c.Attrs, slog.Int("files", d.Totals.Files))
	warnings := append(s.opts.MountWarnings(), s.opts.WaitApplied(ctx, c, d.Revision)...)
	warnings = append(warnings, evictionWarnings(ev)...)
	msg := fmt.Sprintf("Stored %d files (%d bytes): %s.", d.Totals.Files, d.Totals.Bytes, c.Status)
	if s.opts.MountPoint != "" {
		msg += " Programs on the host can read each at its mount_path."
	}
	return tool.Reply{
		Data:     d,
		Message:  msg,
		Warnings: warnings,
		Stats: map[string]any{
			"files":          d.Totals.Files,
			"bytes_received": d.Totals.Bytes,
			"evicted_files":  ev.Count,
			"evicted_bytes":  ev.Bytes,
		},
	}
}

// decodeBatch decodes the entries of files, each exactly as
// guide_cache_file decodes its arguments, and checks the call's limits.
func (s *tools) decodeBatch(elems []json.RawMessage, probs *args.Problems) []fileArgs {
	if len(elems) == 0 {
		probs.Addf("files", "is empty: give at least one file")
		return nil
	}
	if len(elems) > s.opts.MaxBatchFiles {
		probs.Add("files", args.LimitError("%d files exceed the limit of %d per call; split them into calls of at most %d", len(elems), s.opts.MaxBatchFiles, s.opts.MaxBatchFiles))
		return nil
	}
	files := make([]fileArgs, 0, len(elems))
	var total int64
	for i, elem := range elems {
		field := fmt.Sprintf("files[%d]", i)
		o := args.Decode(elem, field, field+".", probs)
		if o == nil {
			continue
		}
		a := decodeFile(o, s.opts.MaxContentBytes)
		a.cond = tool.DecodeCondition(o)
		o.Finish()
		total += int64(len(a.data))
		files = append(files, a)
		if probs.Full() {
			break
		}
	}
	if total > s.opts.MaxBatchBytes {
		probs.Add("files", args.LimitError("%d bytes of content in all exceed the limit of %d per call; split them into smaller calls, or send large files with guide_read_file in chunks", total, s.opts.MaxBatchBytes))
	}
	return files
}

// batchRequests verifies each decoded file, places filename-only uploads,
// and returns the store requests; the same path twice is refused.
func (s *tools) batchRequests(c *tool.Call, files []fileArgs) ([]store.PutRequest, error) {
	probs := &args.Problems{}
	reqs := make([]store.PutRequest, len(files))
	first := make(map[string]int, len(files))
	for i := range files {
		a := &files[i]
		field := fmt.Sprintf("files[%d]", i)
		sum, ok := a.verify(probs, field+".sha256")
		if !ok {
			continue
		}
		if err := a.place(s.opts.Uploads, sum); err != nil {
			probs.Add(field+".filename", err)
			continue
		}
		if err := checkFileSize(a.path, int64(len(a.data)), s.opts.MaxFileBytes); err != nil {
			return nil, err
		}
		if j, dup := first[a.path]; dup {
			probs.Addf(field, "stores %s, as files[%d] already does; send each path once", a.path, j)
			continue
		}
		first[a.path] = i
		reqs[i] = s.request(c, a, toolCacheFiles, sum, a.data)
	}
	return reqs, probs.Err()
}
