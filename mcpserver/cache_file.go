package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/store"
)

const toolCacheFile = "guide_cache_file"

func (s *Server) cacheFileTool() server.ServerTool {
	return server.ServerTool{
		Tool:    s.toolSpec(toolCacheFile, "Cache a file in the depot", true, true),
		Handler: s.handler(guideTool(toolCacheFile), s.cacheFile),
	}
}

// cacheFile stores one whole file.
func (s *Server) cacheFile(ctx context.Context, c *call, raw json.RawMessage) (reply, error) {
	var a fileArgs
	if o := c.decode(raw); o != nil {
		a = decodeFile(o, s.opts.MaxContentBytes)
		o.finish()
	}
	c.path = a.path
	if err := c.args.err(); err != nil {
		return reply{}, err
	}
	return s.putFile(ctx, c, &a, toolCacheFile)
}

// putFile verifies and stores a whole file, waits until the mount shows it,
// and builds the reply. It is shared by guide_cache_file and the one-call
// form of guide_read_file.
func (s *Server) putFile(ctx context.Context, c *call, a *fileArgs, source string) (reply, error) {
	sum, err := a.verify()
	if err != nil {
		return reply{}, err
	}
	if err := a.place(s.uploads, sum); err != nil {
		return reply{}, err
	}
	c.path, c.size, c.sha256 = a.path, int64(len(a.data)), sum

	ctx, cancel := s.commitContext(ctx)
	defer cancel()
	res, err := c.store.Put(ctx, store.PutRequest{
		Path:     a.path,
		Data:     a.data,
		SHA256:   sum,
		Mode:     a.mode,
		MTime:    a.mtime,
		Encoding: a.encoding,
		Source:   source,
		Writer:   c.who.String(),
	})
	if err != nil {
		return reply{}, &storeError{op: "put", path: a.path, err: err}
	}
	c.status = res.Status.String()
	warnings := append(s.mountWarnings(), s.applied(ctx, c, res.Entry.Revision)...)
	data := s.fileData(res, a.filename)
	return reply{
		data:     data,
		message:  s.storedMessage(data),
		warnings: warnings,
		stats: map[string]any{
			"bytes_received": len(a.data),
			"cache_status":   data.Status,
		},
	}, nil
}

// fileData describes a stored file for a reply.
func (s *Server) fileData(res store.PutResult, filename string) *fileData {
	e := res.Entry
	return &fileData{
		Status:    res.Status.String(),
		Key:       e.Path,
		Path:      e.Path,
		MountPath: s.mountPath(e.Path),
		SHA256:    e.SHA256,
		Size:      e.Size,
		Updates:   e.Updates,
		Revision:  e.Revision,
		MTime:     e.MTime.UTC().Format(time.RFC3339Nano),
		Mode:      formatMode(e.Mode),
		Encoding:  e.Encoding,
		Filename:  filename,
	}
}

// storedMessage is the reply message of a completed write.
func (s *Server) storedMessage(d *fileData) string {
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
