package guide

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

const toolReadFile = "guide_read_file"

// chunkArgs are the arguments of one chunk of a chunked upload.
type chunkArgs struct {
	uploadID string
	index    int
	count    int
	sha256   string // this chunk's declared hash, or ""
	total    int64  // total_size: the whole file's size; 0 when not given
}

// uploadData is the progress of a chunked upload in a reply.
type uploadData struct {
	UploadID string `json:"upload_id"`
	Received int    `json:"received"`
	Count    int    `json:"count"`
	Bytes    int64  `json:"bytes"`
	Complete bool   `json:"complete"`
}

// pendingData is the reply data of a chunk that did not complete its file.
type pendingData struct {
	Key       string      `json:"key"`
	Path      string      `json:"path"`
	MountPath string      `json:"mount_path,omitempty"`
	SHA256    string      `json:"sha256"`
	Filename  string      `json:"filename,omitempty"`
	Upload    *uploadData `json:"upload"`
}

// readFile stores a whole file, or one chunk of a chunked upload when any
// chunk argument is present.
func (s *tools) readFile(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	var a fileArgs
	var ch chunkArgs
	chunked := false
	err := args.Parse(raw, c.Args(), func(o *args.Object) {
		a = decodeFile(o, s.opts.MaxContentBytes)
		chunked = o.Has("upload_id") || o.Has("chunk_index") || o.Has("chunk_count") || o.Has("chunk_sha256") || o.Has("total_size")
		if chunked {
			ch = s.decodeChunk(o, a.sha256 != "")
		}
	})
	c.Path = a.path
	if err != nil {
		return tool.Reply{}, err
	}
	if !chunked {
		return s.putFile(ctx, c, &a, toolReadFile)
	}
	return s.putChunk(ctx, c, &a, ch)
}

// decodeChunk reads the chunk arguments; hasSHA says whether the whole-file
// sha256, required for chunks, was given.
func (s *tools) decodeChunk(o *args.Object, hasSHA bool) chunkArgs {
	var ch chunkArgs
	ch.uploadID, _ = o.UploadID("upload_id", true)
	count, countOK := o.IntLimit("chunk_count", true, func(n int64) error {
		return args.LimitError("%d chunks exceed the limit of %d; send bigger chunks (up to %d bytes each)", n, s.opts.MaxChunks, s.opts.MaxContentBytes)
	})
	index, indexOK := o.Int("chunk_index", true)
	ch.sha256, _ = o.SHA256("chunk_sha256", false)
	ch.total = o.Count("total_size", 0)
	if !hasSHA && !o.Has("sha256") {
		o.Problems().Addf("sha256", "required for a chunked upload: the SHA-256 of the whole file, the same on every chunk")
	}
	if countOK && indexOK && index >= count {
		o.Problems().Addf("chunk_index", "%d is out of range for chunk_count %d (valid: 0..%d)", index, count, count-1)
	}
	ch.index, ch.count = int(index), int(count)
	return ch
}

// putChunk stores one chunk and, when it completes the file, replies like
// putFile.
func (s *tools) putChunk(ctx context.Context, c *tool.Call, a *fileArgs, ch chunkArgs) (tool.Reply, error) {
	if err := a.place(s.opts.Uploads, a.sha256); err != nil {
		return tool.Reply{}, err
	}
	c.Path, c.Size = a.path, int64(len(a.data))
	c.Attrs = append(c.Attrs, slog.String("upload_id", ch.uploadID), slog.Int("chunk_index", ch.index), slog.Int("chunk_count", ch.count))
	if ch.total > 0 {
		c.Attrs = append(c.Attrs, slog.Int64("total_size", ch.total))
	}
	// Refused here, before the store holds a byte of the upload: a file
	// announced (or a single chunk) over the file size limit.
	if err := checkFileSize(a.path, max(ch.total, int64(len(a.data))), s.opts.MaxFileBytes); err != nil {
		return tool.Reply{}, err
	}

	ctx, cancel := s.opts.CommitContext(ctx)
	defer cancel()
	p, err := c.Store().PutChunk(ctx, store.Chunk{
		UploadID:  ch.uploadID,
		Index:     ch.index,
		Count:     ch.count,
		Data:      a.data,
		TotalSize: ch.total,
		SHA256:    ch.sha256, // the store hashes the chunk and checks it
		File:      s.request(c, a, toolReadFile+" upload "+ch.uploadID, a.sha256, nil),
	})
	if err != nil {
		if sum := sha256.Sum256(a.data); errors.Is(err, store.ErrHashMismatch) && ch.sha256 != "" && hex.EncodeToString(sum[:]) != ch.sha256 {
			c.SHA256 = hex.EncodeToString(sum[:])
			return tool.Reply{}, args.Problem("chunk_sha256", "chunk %d (%d bytes after decoding) hashes to %s, not %s", ch.index, len(a.data), c.SHA256, ch.sha256)
		}
		return tool.Reply{}, &tool.StoreError{Op: "put chunk", Path: a.path, Err: err}
	}
	c.SHA256 = p.ChunkSHA256
	progress := &uploadData{UploadID: ch.uploadID, Received: p.Received, Count: p.Count, Bytes: p.Bytes, Complete: p.Complete}
	if !p.Complete {
		c.Status = "partial"
		return tool.Reply{
			Data: &pendingData{
				Key: a.path, Path: a.path, MountPath: s.opts.MountPath(a.path),
				SHA256: a.sha256, Filename: a.filename, Upload: progress,
			},
			Message: fmt.Sprintf("Chunk %d of upload %s stored: %d of %d chunks received (%d bytes). Send the remaining chunks; %s appears when the last one arrives.",
				ch.index, ch.uploadID, p.Received, p.Count, p.Bytes, a.path),
			Warnings: s.opts.MountWarnings(),
			Stats:    map[string]any{"bytes_received": len(a.data), "chunks_received": p.Received, "chunk_count": p.Count},
		}, nil
	}
	r := s.stored(ctx, c, p.Result, a.filename, int64(len(a.data)))
	r.Data.(*fileData).Upload = progress
	r.Message = fmt.Sprintf("Upload %s complete: all %d chunks received. %s", ch.uploadID, p.Count, r.Message)
	r.Stats["chunks_received"], r.Stats["chunk_count"] = p.Received, p.Count
	return r, nil
}
