package resources

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/clip"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/store"
)

// readResource answers resources/read for a depot URI: the file's bytes as
// text or as a base64 blob (see textual), with its media type. Every error
// here is worded for the client and names depot paths only; store details
// go to the log. mcp-go sends it as a JSON-RPC internal error (-32603)
// carrying its text, unless ReadError gives it another code (see Hooks).
func (s *Resources) readResource(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	c := s.rt.NewCall(ctx, ReadName, ReadName)
	if p, _, err := parseReadURI(uri); err == nil {
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

// ReadName names resource reads in the audit log and the call log,
// where tools have their names.
const ReadName = "resources/read"

// resourceError is a resource read's error as the client reads it (msg),
// keeping the store's error for classification in the audit record. code,
// if not 0, is the JSON-RPC error code the client gets (see ReadError).
type resourceError struct {
	msg  string
	err  error
	code int
}

func (e *resourceError) Error() string { return e.msg }
func (e *resourceError) Unwrap() error { return e.err }

// readResourceFile reads the file a resource URI names.
func (s *Resources) readResourceFile(ctx context.Context, uri string) (_ mcp.ResourceContents, sum string, size int64, _ error) {
	p, rev, err := parseReadURI(uri)
	if errors.Is(err, ErrURI) && !errors.Is(err, depotpath.ErrEscapes) {
		err = fmt.Errorf("%w: %w", args.ErrInvalid, err)
	}
	if err != nil {
		return nil, "", 0, &resourceError{msg: err.Error(), err: err, code: mcp.INVALID_PARAMS}
	}
	view := s.rt.View(ctx)
	var c store.Content
	if rev == 0 {
		c, err = view.Open(ctx, p)
	} else {
		c, err = view.OpenAt(ctx, p, rev)
	}
	if err != nil {
		return nil, "", 0, s.readError(uri, p, err)
	}
	defer c.Close()
	if c.Size() > s.env.MaxResourceBytes {
		return nil, "", 0, &resourceError{
			msg: fmt.Sprintf("resource %s is %d bytes, over the %d-byte limit of resources/read: read it with a tool that reads in parts, or through the mount", uri, c.Size(), s.env.MaxResourceBytes),
			err: args.ErrLimit,
		}
	}
	data := make([]byte, c.Size())
	if n, err := c.ReadAt(data, 0); n < len(data) {
		return nil, "", 0, s.readError(uri, p, fmt.Errorf("read %d of %d bytes: %w", n, len(data), cmp.Or(err, io.ErrUnexpectedEOF)))
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
	code := 0
	switch {
	case errors.Is(err, store.ErrNotExist):
		msg = fmt.Sprintf("resource %s not found: the depot has no file at %s (resources/list shows the files it has)", uri, p)
		code = mcp.INVALID_PARAMS
	case errors.Is(err, store.ErrIsDir):
		msg = fmt.Sprintf("resource %s not found: %s is a directory, not a file, and only files are resources (resources/list shows them)", uri, p)
		code = mcp.INVALID_PARAMS
	case errors.Is(err, policy.ErrDenied):
		msg = fmt.Sprintf("resource %s: %v", uri, err)
		code = mcp.INVALID_REQUEST
	case errors.Is(err, store.ErrCorrupt):
		// The store has logged the damaged chunk once and counts every
		// read of it; a line here for each read would undo that.
		msg = fmt.Sprintf("resource %s: %s", uri, store.CorruptMessage(p))
	case errors.Is(err, store.ErrNotPresent):
		msg = fmt.Sprintf("resource %s is not available yet: %s was listed by an agent but its content has not arrived; read it after the agent has pushed it (subscribe to be notified)", uri, p)
	default:
		s.log.Error("mcp resource read failed", "path", p, "err", err)
		msg = fmt.Sprintf("resource %s could not be read from the depot; try again", uri)
	}
	return &resourceError{msg: msg, err: err, code: code}
}

// ReadError returns the JSON-RPC error a failed resources/read of uri
// answers, err being the error mcp-go reports for it, if depotfs chooses
// one: -32602 (invalid params) with data {"uri": uri} for a resource that
// is not found (no file there, a directory, an invalid depot URI, or a URI
// of another scheme, which no resource template matches), as SEP-2164
// asks; -32600 (invalid request), also with data.uri, for a read the
// caller's grants refuse. Other errors (the depot or its audit log
// failing, content that failed its integrity check, a file over the size
// limit or not yet pushed) are left to mcp-go, which sends -32603 with
// their text: a failure of the server's, not of the request.
func ReadError(uri string, err error) (mcp.JSONRPCErrorDetails, bool) {
	data := map[string]string{"uri": uri}
	var re *resourceError
	switch {
	case errors.As(err, &re) && re.code != 0:
		return mcp.NewJSONRPCErrorDetails(re.code, re.msg, data), true
	case errors.Is(err, server.ErrResourceNotFound):
		msg := fmt.Sprintf("resource %s not found: depotfs serves only %s:/// URIs and %s (resources/list and resources/templates/list show them)",
			clip.String(uri), Scheme, pending.URI)
		return mcp.NewJSONRPCErrorDetails(mcp.INVALID_PARAMS, msg, data), true
	}
	return mcp.JSONRPCErrorDetails{}, false
}
