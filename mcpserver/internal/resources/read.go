package resources

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/store"
)

// readResource answers resources/read for a depot URI: the file's bytes as
// text or as a base64 blob (see textual), with its media type. mcp-go sends
// the error of a failed read to the client as a JSON-RPC internal error
// (-32603) carrying the error's text, so every error here is worded for
// the client and names depot paths only; store details go to the log.
func (s *Resources) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	c := s.rt.NewCall(ctx, resourcesRead, resourcesRead)
	if p, err := ParseURI(uri); err == nil {
		c.Path = p
		c.Note(p)
	}
	contents, sum, size, err := s.readResourceFile(ctx, uri)
	if err == nil {
		c.Size, c.SHA256 = size, sum
	}
	if auditErr := s.rt.Finish(c, err); auditErr != nil {
		return nil, fmt.Errorf("resource %s: depotfs cannot write its audit log, so it refuses reads until it can; try again later", uri)
	}
	if err != nil {
		return nil, err
	}
	return []mcp.ResourceContents{contents}, nil
}

// resourcesRead names resource reads in the audit log and the call log,
// where tools have their names.
const resourcesRead = "resources/read"

// resourceError is a resource read's error as the client reads it (msg),
// keeping the store's error for classification in the audit record.
type resourceError struct {
	msg string
	err error
}

func (e *resourceError) Error() string { return e.msg }
func (e *resourceError) Unwrap() error { return e.err }

// readResourceFile reads the file a resource URI names.
func (s *Resources) readResourceFile(ctx context.Context, uri string) (_ mcp.ResourceContents, sum string, size int64, _ error) {
	p, err := ParseURI(uri)
	if errors.Is(err, ErrURI) && !errors.Is(err, depotpath.ErrEscapes) {
		return nil, "", 0, &resourceError{msg: err.Error(), err: fmt.Errorf("%w: %w", args.ErrInvalid, err)}
	}
	if err != nil {
		return nil, "", 0, err
	}
	c, err := s.rt.View(ctx).Open(ctx, p)
	if err != nil {
		return nil, "", 0, s.readError(uri, p, err)
	}
	defer c.Close()
	if c.Size() > s.maxBytes {
		return nil, "", 0, &resourceError{
			msg: fmt.Sprintf("resource %s is %d bytes, over the %d-byte limit of resources/read: read it with a tool that reads in parts, or through the mount", uri, c.Size(), s.maxBytes),
			err: args.ErrLimit,
		}
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
func (s *Resources) readError(uri, p string, err error) error {
	var msg string
	switch {
	case errors.Is(err, store.ErrNotExist):
		msg = fmt.Sprintf("resource %s not found: the depot has no file at %s (resources/list shows the files it has)", uri, p)
	case errors.Is(err, store.ErrIsDir):
		msg = fmt.Sprintf("resource %s is a directory, not a file: only files are resources (resources/list shows them)", uri)
	case errors.Is(err, policy.ErrDenied):
		msg = fmt.Sprintf("resource %s: %v", uri, err)
	case errors.Is(err, store.ErrNotPresent):
		msg = fmt.Sprintf("resource %s is not available yet: %s was listed by an agent but its content has not arrived; read it after the agent has pushed it (subscribe to be notified)", uri, p)
	default:
		s.log.Error("mcp resource open failed", "path", p, "err", err)
		msg = fmt.Sprintf("resource %s could not be read from the depot; try again", uri)
	}
	return &resourceError{msg: msg, err: err}
}
