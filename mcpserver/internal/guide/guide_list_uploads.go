package guide

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolListUploads = "guide_list_uploads"

// UploadInfo is one chunked upload in the replies of guide_list_uploads
// and guide_drop_uploads. It is exported so that "depotfs uploads" can
// decode the replies into it. A plain value.
type UploadInfo struct {
	UploadID       string    `json:"upload_id"`
	Path           string    `json:"path"`
	ReceivedChunks int       `json:"received_chunks"`
	ChunkCount     int       `json:"chunk_count"`
	ReceivedBytes  int64     `json:"received_bytes"`
	TotalSize      int64     `json:"total_size,omitempty"`
	Started        time.Time `json:"started"`
	LastChunk      time.Time `json:"last_chunk"`
	IdleSeconds    int64     `json:"idle_seconds"`
	Complete       bool      `json:"complete"`
}

// ListUploadsData is the reply data of guide_list_uploads.
type ListUploadsData struct {
	Path    string       `json:"path"`
	Uploads []UploadInfo `json:"uploads"`
	// Bytes is what the uploads in progress among them hold; it counts
	// against the depot's size limit.
	Bytes int64 `json:"bytes"`
}

// uploadInfos describes ups as of now, and sums what those in progress
// hold.
func uploadInfos(ups []store.UploadInfo, now time.Time) (out []UploadInfo, held int64) {
	out = make([]UploadInfo, len(ups))
	for i, u := range ups {
		out[i] = UploadInfo{UploadID: u.ID, Path: u.Path, ReceivedChunks: u.Received, ChunkCount: u.Count,
			ReceivedBytes: u.Bytes, TotalSize: u.Total, Started: u.Started.UTC(), LastChunk: u.Last.UTC(),
			IdleSeconds: max(0, int64(now.Sub(u.Last)/time.Second)), Complete: u.Complete}
		if !u.Complete {
			held += u.Bytes
		}
	}
	return out, held
}

// shownDir is how a reply names dir.
func shownDir(dir string) string {
	if dir == "" {
		return depotpath.Root
	}
	return dir
}

// listUploads lists the chunked uploads the caller may see.
func (s *tools) listUploads(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		Path string `json:"path" args:"path"` // "": every upload the caller may see
	}
	err := args.Fill(raw, c.OwnArgs(), &a)
	dir := a.Path
	if err != nil {
		return tool.Reply{}, err
	}
	ups, err := c.Store().ListUploads(ctx, dir)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "list uploads", Path: shownDir(dir), Err: err}
	}
	d := ListUploadsData{Path: shownDir(dir)}
	d.Uploads, d.Bytes = uploadInfos(ups, s.opts.Now())
	c.Status = fmt.Sprintf("%d uploads", len(ups))
	return tool.Reply{Data: d, Message: fmt.Sprintf("%d chunked upload(s) under %s; those in progress hold %d bytes.", len(ups), shownDir(dir), d.Bytes)}, nil
}
