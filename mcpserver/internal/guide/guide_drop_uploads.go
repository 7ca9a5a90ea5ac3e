package guide

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolDropUploads = "guide_drop_uploads"

// maxDropIDs bounds the upload ids one guide_drop_uploads call names.
const maxDropIDs = 1000

// DropUploadsData is the reply data of guide_drop_uploads.
type DropUploadsData struct {
	Dropped []UploadInfo `json:"dropped"`
	// Freed is what the dropped uploads in progress held.
	Freed int64 `json:"freed_bytes"`
	// Kept are the upload ids named that were not dropped, each with the
	// reason: "not_found" (no such upload under path), "recent" (it
	// received a chunk within idle_seconds) or "busy" (it was storing a
	// chunk).
	Kept []KeptUpload `json:"kept"`
}

// KeptUpload is an upload guide_drop_uploads was asked to drop and did not.
type KeptUpload struct {
	UploadID string `json:"upload_id"`
	Reason   string `json:"reason"`
}

// dropUploads drops the uploads named, or all those idle long enough.
func (s *tools) dropUploads(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a struct {
		Path        string    `json:"path" args:"path"` // "": every upload the caller may see
		UploadIDs   uploadIDs `json:"upload_ids"`
		IdleSeconds *int64    `json:"idle_seconds"`
	}
	err := args.Fill(raw, c.OwnArgs(), &a, func(o *args.Object) {
		if !o.Has("upload_ids") && !o.Has("idle_seconds") {
			o.Problems().Addf("upload_ids", "give upload_ids, idle_seconds or both (idle_seconds 0 alone drops every upload)")
		}
	})
	dir, ids, idle := a.Path, []string(a.UploadIDs), time.Duration(-1)
	if a.IdleSeconds != nil {
		// Beyond what a Duration holds nothing has been idle that long
		// anyway.
		idle = time.Duration(min(*a.IdleSeconds, math.MaxInt64/int64(time.Second))) * time.Second
	}
	if err != nil {
		return tool.Reply{}, err
	}
	before, err := c.Store().ListUploads(ctx, dir)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "list uploads", Path: shownDir(dir), Err: err}
	}
	dropped, err := c.Store().DropUploads(ctx, dir, ids, max(idle, 0))
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "drop uploads", Path: shownDir(dir), Err: err}
	}
	now := s.opts.Now()
	d := DropUploadsData{Kept: []KeptUpload{}}
	d.Dropped, d.Freed = uploadInfos(dropped, now)
	for _, id := range ids {
		if slices.ContainsFunc(dropped, func(u store.UploadInfo) bool { return u.ID == id }) {
			continue
		}
		reason := "not_found"
		if i := slices.IndexFunc(before, func(u store.UploadInfo) bool { return u.ID == id }); i >= 0 {
			reason = "busy"
			if now.Sub(before[i].Last) < idle {
				reason = "recent"
			}
		}
		d.Kept = append(d.Kept, KeptUpload{UploadID: id, Reason: reason})
	}
	c.Status = fmt.Sprintf("dropped %d", len(dropped))
	return tool.Reply{Data: d, Message: fmt.Sprintf("Dropped %d chunked upload(s), freeing %d bytes; %d named upload(s) kept.", len(dropped), d.Freed, len(d.Kept))}, nil
}

// uploadIDs is guide_drop_uploads' upload_ids argument: 1 to maxDropIDs
// valid ids, each once; nil when absent.
type uploadIDs []string

// DecodeArg reads field into ids.
func (ids *uploadIDs) DecodeArg(o *args.Object, field string, required bool) {
	elems, ok := o.Array(field, required)
	if !ok {
		return
	}
	if len(elems) == 0 || len(elems) > maxDropIDs {
		o.Problems().Addf(field, "give 1 to %d upload ids, got %d", maxDropIDs, len(elems))
	}
	*ids = []string{}
	for i, e := range elems {
		id, err := args.DecodeString(e)
		if err == nil {
			err = args.CheckUploadID(id)
		}
		if err != nil {
			o.Problems().Addf(fmt.Sprintf("%s[%d]", field, i), "%v", err)
		} else if !slices.Contains(*ids, id) {
			*ids = append(*ids, id)
		}
	}
}
