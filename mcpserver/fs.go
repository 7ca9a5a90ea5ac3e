package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// The fs profile speaks the filesystem contract (list, read, write, mkdir,
// delete, copy, move, info, search) over the depot namespace, with its
// reply objects and its {"error": {"code", "message", "details"}} errors.
// Paths are relative to the depot root, as the contract's are to its
// server root.

// The error codes of the fs contract, and internal_error for a failure of
// depotfs itself (the contract has no code for it).
const (
	fsPathInvalid = "path_validation_error"
	fsPermission  = "permission_denied"
	fsNotFound    = "not_found"
	fsExists      = "already_exists"
	fsInvalid     = "invalid_parameters"
	fsInternal    = "internal_error"
)

// fsTools returns the tools of the fs profile.
func (s *Server) fsTools() []tool {
	r := func(name string) pathArg { return pathArg{name: name, access: grant.Read} }
	w := func(name string) pathArg { return pathArg{name: name, access: grant.Write} }
	rw := func(name string) pathArg { return pathArg{name: name, access: grant.ReadWrite} }
	readOnly := hints{readOnly: true, idempotent: true}
	return []tool{
		s.fsTool("list", "List a depot directory", readOnly, []pathArg{r("path")}, s.fsList),
		s.fsTool("read", "Read a depot file", readOnly, []pathArg{r("path")}, s.fsRead),
		s.fsTool("write", "Write a file in the depot", hints{destructive: true}, []pathArg{w("path")}, s.fsWrite),
		s.fsTool("mkdir", "Create a depot directory", hints{idempotent: true}, []pathArg{w("path")}, s.fsMkdir),
		s.fsTool("delete", "Delete a depot file or directory", hints{destructive: true, idempotent: true}, []pathArg{w("path")}, s.fsDelete),
		s.fsTool("copy", "Copy a depot file or directory", hints{destructive: true, idempotent: true}, []pathArg{r("source"), w("destination")}, s.fsCopy),
		s.fsTool("move", "Move or rename a depot file or directory", hints{destructive: true, idempotent: true}, []pathArg{rw("source"), w("destination")}, s.fsMove),
		s.fsTool("info", "Describe a depot path", readOnly, []pathArg{r("path")}, s.fsInfo),
		s.fsTool("search", "Search depot files for text", readOnly, []pathArg{r("root_path")}, s.fsSearch),
	}
}

func (s *Server) fsTool(name, title string, h hints, paths []pathArg, run toolFunc) tool {
	return tool{
		spec:    s.profileSpec(ProfileFS, name, title, h, true),
		profile: ProfileFS,
		paths:   paths,
		shape:   fsShape{},
		run:     run,
	}
}

// fsShape renders fs replies: the reply object as JSON text and as
// structured content; a failure as the contract's error object, the same
// way, with isError set.
type fsShape struct{}

var _ replyShape = fsShape{}

func (fsShape) success(_ *call, out reply) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(out.data)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(raw))},
		StructuredContent: json.RawMessage(raw),
	}, nil
}

func (fsShape) failure(c *call, err error) *mcp.CallToolResult {
	code, msg, path := fsFailure(err)
	if path == "" && c.path != "" {
		path = relPath(c.path)
	}
	type details struct {
		Path      string `json:"path,omitempty"`
		Operation string `json:"operation"`
	}
	type failure struct {
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Details details `json:"details"`
	}
	raw, _ := json.Marshal(map[string]failure{"error": {code, msg, details{path, c.tool}}})
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(raw))},
		StructuredContent: json.RawMessage(raw),
		IsError:           true,
	}
}

// fsError is a failure an fs tool words itself. path is the depot path it
// concerns ("" for the call's path), err the sentinel that classifies it
// for the log.
type fsError struct {
	code string
	msg  string
	path string
	err  error
}

func (e *fsError) Error() string { return e.msg }
func (e *fsError) Unwrap() error { return e.err }

// fsFailure returns the code, message and relative path of a failed call.
func fsFailure(err error) (code, msg, path string) {
	var fe *fsError
	if errors.As(err, &fe) {
		if fe.path != "" {
			path = relPath(fe.path)
		}
		return fe.code, fe.msg, path
	}
	f := classify(err)
	switch {
	case errors.Is(err, depotpath.ErrEscapes):
		return fsPathInvalid, "Path is outside of the allowed root directory: " + f.Message, ""
	case errors.Is(err, depotpath.ErrInvalid):
		return fsPathInvalid, "Invalid path: " + f.Message, ""
	case errors.Is(err, fs.ErrPermission):
		return fsPermission, "Permission denied to access the specified path: " + err.Error(), ""
	case isArgError(err), errors.Is(err, errArgs), errors.Is(err, errLimit):
		return fsInvalid, f.Message, ""
	case errors.Is(err, store.ErrNotExist), errors.Is(err, store.ErrNotPresent):
		return fsNotFound, "The specified path does not exist", ""
	case errors.Is(err, store.ErrExist):
		return fsExists, "The path already exists", ""
	}
	return fsInternal, f.Message, ""
}

// fsStoreError turns an error of the store about depot path p into the
// contract's terms.
func fsStoreError(err error, p string) error {
	rel := relPath(p)
	switch {
	case errors.Is(err, errLimit), errors.Is(err, errArgs):
		return err // already worded for the agent
	case errors.Is(err, store.ErrNotExist):
		return &fsError{fsNotFound, "The specified path does not exist: " + rel, p, err}
	case errors.Is(err, store.ErrNotPresent):
		return &fsError{fsNotFound, "The file's content has not arrived yet (it was listed, never pushed): " + rel, p, err}
	case errors.Is(err, store.ErrExist):
		return &fsError{fsExists, "The path already exists and overwrite is not enabled: " + rel, p, err}
	case errors.Is(err, store.ErrIsDir):
		return &fsError{fsInvalid, "The path is a directory: " + rel, p, err}
	case errors.Is(err, store.ErrNotDir):
		return &fsError{fsInvalid, "The path is not a directory: " + rel, p, err}
	case errors.Is(err, store.ErrConflict):
		return &fsError{fsInvalid, "A path is either a file or a directory, never both: " + rel + " or one of its parents is a file where a directory is needed, or the reverse", p, err}
	case errors.Is(err, store.ErrNotEmpty):
		return &fsError{fsInvalid, "The directory is not empty; set recursive to delete it with everything in it: " + rel, p, err}
	case errors.Is(err, store.ErrRevision):
		return &fsError{fsInternal, "The path changed while the call ran; call again: " + rel, p, err}
	}
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	return &storeError{op: "fs", path: p, err: err}
}

// relPath shows a clean depot path relative to the depot root, as the
// contract's paths are relative to its server root: "a/b" for "/a/b", "."
// for the root.
func relPath(p string) string {
	if p == depotpath.Root {
		return "."
	}
	return strings.TrimPrefix(p, "/")
}

// fsPathArg reads a path argument: relative to the depot root ("a/b"),
// or absolute in the depot ("/a/b"); "" and "." are the root.
func fsPathArg(o *object, field string) string {
	raw, ok := o.raw(field)
	if ok && string(raw) == `""` {
		o.known[field] = true
		return depotpath.Root
	}
	p, _ := o.depotPath(field, true)
	return p
}

// fsTime formats a time as the contract does: RFC 3339 in UTC.
func fsTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// fsMetadata is the metadata object of read and write replies.
type fsMetadata struct {
	Path     string `json:"path"`
	Modified string `json:"modified"`
	Size     int64  `json:"size"`
}

func newFSMetadata(e store.Entry) fsMetadata {
	return fsMetadata{Path: relPath(e.Path), Modified: fsTime(entryTime(e)), Size: e.Size}
}

// fsCommitted waits until the mount shows the store's current revision
// after a write, and returns the warnings to add to the reply.
func (s *Server) fsCommitted(ctx context.Context, c *call) []string {
	rev, err := c.store.Revision(ctx)
	if err != nil {
		return []string{fmt.Sprintf("The change is stored, but its revision could not be read to wait for the mount: %v", classify(err).Message)}
	}
	return s.applied(ctx, c, rev)
}
