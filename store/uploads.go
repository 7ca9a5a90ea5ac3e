package store

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// UploadInfo describes one chunked upload a store holds: one in progress,
// or one completed and kept (to answer retries of its chunks) until it
// expires. A plain value.
type UploadInfo struct {
	ID       string
	Path     string
	Received int   // distinct chunks stored so far
	Count    int   // chunks announced
	Bytes    int64 // bytes received; while in progress they count in Stats.UploadBytes
	// Total is the file's size as the client announced it; 0: not
	// announced.
	Total    int64
	Started  time.Time // arrival of the first chunk
	Last     time.Time // arrival of the latest chunk, or completion
	Complete bool
}

// UploadAdmin is implemented by stores that let an operator see the
// chunked uploads they hold and drop them before Options.UploadTimeout (of
// each implementation) would: an abandoned upload's chunks count against
// the store's size limit until then. Both methods are safe for concurrent
// use.
type UploadAdmin interface {
	// ListUploads returns every upload the store holds, oldest Started
	// first.
	ListUploads(ctx context.Context) ([]UploadInfo, error)
	// DropUploads deletes, among the uploads named by ids (nil: all of
	// them), those that received no chunk for at least idle (0: however
	// recent) and are not storing a chunk at this moment, and returns
	// what it deleted, in the order of ListUploads. An id the store does
	// not hold is not an error: it is simply not returned. The room an
	// upload in progress held is free when DropUploads returns; a later
	// chunk of a dropped upload starts it anew. A negative idle fails
	// with an error wrapping fs.ErrInvalid.
	DropUploads(ctx context.Context, ids []string, idle time.Duration) ([]UploadInfo, error)
}

// SortUploads sorts uploads as ListUploads returns them: oldest Started
// first, then by ID.
func SortUploads(uploads []UploadInfo) {
	slices.SortFunc(uploads, func(a, b UploadInfo) int {
		return cmp.Or(a.Started.Compare(b.Started), cmp.Compare(a.ID, b.ID))
	})
}
