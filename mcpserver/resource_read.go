package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/depotfs/depotfs/mcpserver/policy"
	"log/slog"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/identity"
	"github.com/depotfs/depotfs/store"
)

// readResource answers resources/read for a depot URI: the file's bytes as
// text or as a base64 blob (see textual), with its media type. mcp-go sends
// the error of a failed read to the client as a JSON-RPC internal error
// (-32603) carrying the error's text, so every error here is worded for
// the client and names depot paths only; store details go to the log.
func (s *Server) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	start := time.Now()
	uri := req.Params.URI
	who, _ := identity.FromContext(ctx)
	attrs := []slog.Attr{slog.String("uri", uri), slog.String("identity", who.String())}
	contents, sum, size, err := s.readResourceFile(ctx, uri)
	attrs = append(attrs, slog.Duration("duration", time.Since(start)))
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "mcp resource read", append(attrs, slog.String("outcome", "refused"), slog.String("err", err.Error()))...)
		return nil, err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "mcp resource read", append(attrs, slog.String("outcome", "ok"), slog.Int64("size", size), slog.String("sha256", sum))...)
	return []mcp.ResourceContents{contents}, nil
}

// readResourceFile reads the file a resource URI names.
func (s *Server) readResourceFile(ctx context.Context, uri string) (_ mcp.ResourceContents, sum string, size int64, _ error) {
	p, err := ParseResourceURI(uri)
	if err != nil {
		return nil, "", 0, err
	}
	c, err := s.resources(ctx).Open(ctx, p)
	if err != nil {
		return nil, "", 0, s.readError(uri, p, err)
	}
	defer c.Close()
	if c.Size() > s.opts.MaxResourceBytes {
		return nil, "", 0, fmt.Errorf("resource %s is %d bytes, over the %d-byte limit of resources/read: read it with a tool that reads in parts, or through the mount", uri, c.Size(), s.opts.MaxResourceBytes)
	}
	data := make([]byte, c.Size())
	if n, err := c.ReadAt(data, 0); n < len(data) {
		s.log.Error("mcp resource read failed", "path", p, "read", n, "size", len(data), "err", err)
		return nil, "", 0, fmt.Errorf("resource %s could not be read from the depot; try again", uri)
	}
	t := mediaType(p, data[:min(len(data), sniffLen)])
	if textual(t, data) {
		return mcp.TextResourceContents{URI: uri, MIMEType: t, Text: string(data)}, c.SHA256(), c.Size(), nil
	}
	return mcp.BlobResourceContents{URI: uri, MIMEType: t, Blob: base64.StdEncoding.EncodeToString(data)}, c.SHA256(), c.Size(), nil
}

// readError words a store error for the client.
func (s *Server) readError(uri, p string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotExist):
		return fmt.Errorf("resource %s not found: the depot has no file at %s (resources/list shows the files it has)", uri, p)
	case errors.Is(err, store.ErrIsDir):
		return fmt.Errorf("resource %s is a directory, not a file: only files are resources (resources/list shows them)", uri)
	case errors.Is(err, policy.ErrDenied):
		return fmt.Errorf("resource %s: %w", uri, err)
	case errors.Is(err, store.ErrNotPresent):
		return fmt.Errorf("resource %s is not available yet: %s was listed by an agent but its content has not arrived; read it after the agent has pushed it (subscribe to be notified)", uri, p)
	}
	s.log.Error("mcp resource open failed", "path", p, "err", err)
	return fmt.Errorf("resource %s could not be read from the depot; try again", uri)
}
