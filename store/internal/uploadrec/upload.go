// Package uploadrec is the record of a chunked upload (store.Store.PutChunk)
// both stores keep, and its rules: what the first chunk fixes, which
// later chunks belong to it, what the announced size and the limits let
// in, and the progress it reports. Where chunks and records are stored,
// and when an upload completes, are each store's.
package uploadrec

import (
	"errors"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// ErrGone reports an upload deleted (expired, dropped or discarded)
// while a chunk completed it; the upload's lock makes it an internal
// error on bolt.
var ErrGone = errors.New("upload vanished while completing")

// Upload is a chunked upload in progress, or completed and kept to answer
// retried chunks until it expires. The JSON names are both stores' stored
// format: changing one makes uploads in progress unreadable.
type Upload struct {
	Count    int              `json:"count"`
	File     store.PutRequest `json:"file"` // without Data
	Received int              `json:"received"`
	Bytes    int64            `json:"bytes"`
	Total    int64            `json:"total,omitzero"` // announced size; 0: not announced
	Started  time.Time        `json:"started"`
	Last     time.Time        `json:"last"` // arrival of the last chunk, or completion
	// Result is set once the upload completed.
	Result *store.PutResult `json:"result,omitzero"`
}

// Start is the upload chunk c begins at now: c fixes its count and its
// file (path, whole-file hash, metadata).
func Start(c store.Chunk, now time.Time) Upload {
	file := c.File
	file.Data = nil
	return Upload{Count: c.Count, File: file, Started: now}
}

// Progress is what u reports, as upload id.
func (u *Upload) Progress(id string) store.UploadProgress {
	p := store.UploadProgress{UploadID: id, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes}
	if u.Result != nil {
		p.Complete, p.Result = true, *u.Result
	}
	return p
}

// Info describes u, as upload id, to an operator (store.UploadAdmin).
func (u *Upload) Info(id string) store.UploadInfo {
	return store.UploadInfo{ID: id, Path: u.File.Path, Received: u.Received, Count: u.Count, Bytes: u.Bytes,
		Total: u.Total, Started: u.Started, Last: u.Last, Complete: u.Result != nil}
}

// Matches fails with store.ErrUpload unless chunk c repeats what the
// upload's first chunk fixed: the count, the path and the whole-file hash.
func (u *Upload) Matches(c store.Chunk) error {
	switch {
	case c.Count != u.Count:
		return fmt.Errorf("%w: count %d, the upload has %d", store.ErrUpload, c.Count, u.Count)
	case c.File.Path != u.File.Path:
		return fmt.Errorf("%w: the upload is for %s", store.ErrUpload, u.File.Path)
	case c.File.SHA256 != u.File.SHA256:
		return fmt.Errorf("%w: sha256 %s, the upload has %s", store.ErrUpload, c.File.SHA256, u.File.SHA256)
	}
	return nil
}

// Admit checks a chunk c not received before against the size the upload
// announced and the limits, and records a size c announces: a chunk may
// not announce another size, the chunks may not hold more than announced,
// and the last one must make it exact.
func (u *Upload) Admit(lim check.Limits, c store.Chunk) error {
	if c.TotalSize > 0 {
		if u.Total > 0 && c.TotalSize != u.Total {
			return fmt.Errorf("%w: total size %d, the upload announced %d", store.ErrUpload, c.TotalSize, u.Total)
		}
		u.Total = c.TotalSize
	}
	bytes := u.Bytes + int64(len(c.Data))
	if err := lim.Size(max(bytes, u.Total)); err != nil {
		return err
	}
	last := u.Received+1 == u.Count
	if u.Total > 0 && (bytes > u.Total || (last && bytes != u.Total)) {
		return fmt.Errorf("%w: the chunks hold %d bytes, the upload announced %d", store.ErrUpload, bytes, u.Total)
	}
	return nil
}

// Add counts a chunk of size bytes received at now.
func (u *Upload) Add(size int64, now time.Time) {
	u.Received++
	u.Bytes += size
	u.Last = now
}

// Ready reports whether every chunk is in and the upload is not completed
// yet: the chunk that made it so completes it.
func (u *Upload) Ready() bool { return u.Result == nil && u.Received == u.Count }
