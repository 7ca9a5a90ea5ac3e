package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// The provider profile speaks the file-provider contract a scanner calls
// (read_file, read_file_binary, list_directory, file_exists,
// get_file_stats, calculate_file_hash, find_files) with its own reply
// shapes: the value itself, or {"error", "error_type"}.

// The error types of the provider contract.
const (
	providerNotFound   = "FileNotFoundError"
	providerPermission = "PermissionError"
	providerTooLarge   = "FileSizeLimitExceededError"
	providerFailed     = "FileProviderError"
)

// providerTools returns the tools of the provider profile. All of them only
// read the depot.
func (s *Server) providerTools() []tool {
	read := func(names ...string) []pathArg {
		out := make([]pathArg, len(names))
		for i, n := range names {
			out[i] = pathArg{name: n, access: grant.Read}
		}
		return out
	}
	return []tool{
		s.providerTool("read_file", "Read a text file from the depot", read("file_path"), providerShape{}, s.providerReadFile),
		s.providerTool("read_file_binary", "Read a file from the depot as base64", read("file_path"), providerShape{}, s.providerReadFileBinary),
		s.providerTool("list_directory", "List a depot directory", read("directory_path"), providerShape{}, s.providerListDirectory),
		s.providerTool("file_exists", "Check whether a depot path exists", read("path"), providerShape{falseOnError: true}, s.providerFileExists),
		s.providerTool("get_file_stats", "Get a depot entry's statistics", read("path"), providerShape{structured: true}, s.providerFileStats),
		s.providerTool("calculate_file_hash", "Hash a file in the depot", read("file_path"), providerShape{}, s.providerFileHash),
		s.providerTool("find_files", "Find files in the depot by name", read("directory_path"), providerShape{}, s.providerFindFiles),
	}
}

// providerTool builds one provider tool: read-only, idempotent, closed
// world; an output schema only where the contract returns an object.
func (s *Server) providerTool(name, title string, paths []pathArg, shape providerShape, run toolFunc) tool {
	return tool{
		spec:    s.profileSpec(ProfileProvider, name, title, hints{readOnly: true, idempotent: true}, shape.structured),
		profile: ProfileProvider,
		paths:   paths,
		shape:   shape,
		run:     run,
	}
}

// providerShape renders provider replies. A value that is a string (file
// text, base64, a hex digest) is the text content as is; any other value
// (a list of paths, a boolean, a stats object) is its JSON. A failure is
// the contract's {"error", "error_type"} object as JSON text, with isError
// set so that MCP clients and models see the call failed, and the same
// object as structured content.
type providerShape struct {
	// structured: the tool has an output schema, so its value (an object)
	// is also the structured content.
	structured bool
	// falseOnError: the contract forbids errors (file_exists): every
	// failure except malformed arguments answers false.
	falseOnError bool
}

var _ replyShape = providerShape{}

func (p providerShape) success(_ *call, out reply) (*mcp.CallToolResult, error) {
	if text, ok := out.data.(string); ok {
		return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}, nil
	}
	raw, err := json.Marshal(out.data)
	if err != nil {
		return nil, err
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(raw))}}
	if p.structured {
		res.StructuredContent = json.RawMessage(raw)
	}
	return res, nil
}

func (p providerShape) failure(c *call, err error) *mcp.CallToolResult {
	if p.falseOnError && !isArgError(err) {
		res, _ := p.success(c, reply{data: false})
		return res
	}
	typ, msg := providerFailure(err)
	raw, _ := json.Marshal(map[string]string{"error": msg, "error_type": typ})
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(raw))},
		StructuredContent: json.RawMessage(raw),
		IsError:           true,
	}
}

// providerError is a failure a provider tool words itself, in the
// contract's terms ("File not found: /x"). err is the sentinel that
// classifies it for the log.
type providerError struct {
	typ string
	msg string
	err error
}

func (e *providerError) Error() string { return e.msg }
func (e *providerError) Unwrap() error { return e.err }

// providerFailure returns the error type and message of a failed call.
func providerFailure(err error) (typ, msg string) {
	var pe *providerError
	var de *depotpath.Error
	switch {
	case errors.As(err, &pe):
		return pe.typ, pe.msg
	case errors.Is(err, depotpath.ErrEscapes) && errors.As(err, &de):
		return providerPermission, fmt.Sprintf("Permission denied: %q leaves the depot", de.Path)
	case errors.Is(err, fs.ErrPermission):
		return providerPermission, "Permission denied: " + classify(err).Message
	case isArgError(err):
		return providerFailed, "Invalid arguments: " + strings.TrimPrefix(classify(err).Message, "invalid arguments: ")
	case errors.Is(err, errLimit):
		return providerTooLarge, classify(err).Message
	case errors.Is(err, store.ErrNotExist):
		return providerNotFound, "Not found: " + classify(err).Message
	}
	return providerFailed, "Unexpected error: " + classify(err).Message
}

// isArgError reports whether err is a problem with the call's arguments
// (found before anything was read).
func isArgError(err error) bool {
	var ae *argError
	return errors.As(err, &ae)
}

// providerPath is a path argument of the provider profile: the depot path
// it names and how to show paths back to the caller.
type providerPath struct {
	depot string // clean depot path
	// mount is the host mount point when the caller named the entry under
	// it ("/mnt/depot/a/b"); replies then name entries the same way.
	mount string
}

// show returns depot path p as the caller names entries.
func (p providerPath) show(depot string) string {
	if p.mount == "" {
		return depot
	}
	return filepath.Join(p.mount, filepath.FromSlash(depot))
}

// providerPathArg reads a path argument: a depot path ("/a/b", or "a/b"
// from the root), or the same entry under Options.MountPoint
// ("/mnt/depot/a/b"), which is stripped. A host path outside the mount
// point is taken as a depot path: it can only name depot entries.
func (s *Server) providerPathArg(o *object, field string) providerPath {
	p, ok := o.depotPath(field, true)
	if !ok {
		return providerPath{}
	}
	if s.opts.MountPoint == "" {
		return providerPath{depot: p}
	}
	mount, err := depotpath.Clean(s.opts.MountPoint)
	if err != nil || mount == depotpath.Root || !depotpath.Within(p, mount) {
		return providerPath{depot: p}
	}
	return providerPath{depot: "/" + strings.TrimLeft(strings.TrimPrefix(p, mount), "/"), mount: s.opts.MountPoint}
}

// providerSize reads max_size or max_files: an integer, or a string of
// digits as some clients send; 0 or absent means no limit but the
// server's.
func providerSize(o *object, field string) int64 {
	return o.count(field, 0, 0, maxExactInteger)
}

// Errors of the provider profile, in the contract's words.

func providerNotFoundError(kind string, p providerPath) error {
	return &providerError{providerNotFound, fmt.Sprintf("%s not found: %s", kind, p.show(p.depot)), store.ErrNotExist}
}

func providerNotFile(p providerPath) error {
	return &providerError{providerFailed, "Path is not a file: " + p.show(p.depot), store.ErrIsDir}
}

func providerNotDir(p providerPath) error {
	return &providerError{providerFailed, "Path is not a directory: " + p.show(p.depot), store.ErrNotDir}
}

func providerNotPresent(p providerPath) error {
	return &providerError{providerFailed, "File content has not arrived yet: " + p.show(p.depot) + " was listed but its content was never pushed", store.ErrNotPresent}
}

func providerSizeError(size, limit int64, whose string) error {
	return &providerError{providerTooLarge, fmt.Sprintf("File size %d exceeds %slimit %d", size, whose, limit), errLimit}
}

// providerStoreError turns an error of the store about p into the
// contract's terms; kind is "File", "Directory" or "Path".
func providerStoreError(err error, kind string, p providerPath) error {
	switch {
	case errors.Is(err, store.ErrNotExist):
		return providerNotFoundError(kind, p)
	case errors.Is(err, store.ErrIsDir):
		return providerNotFile(p)
	case errors.Is(err, store.ErrNotDir):
		return providerNotDir(p)
	case errors.Is(err, store.ErrNotPresent):
		return providerNotPresent(p)
	}
	var se *storeError
	if errors.As(err, &se) {
		return err
	}
	return &storeError{op: "read", path: p.depot, err: err}
}

// isoTime formats t as Python's datetime.isoformat does for an aware UTC
// time ("2024-04-10T15:30:00+00:00", microseconds only when not zero), which
// every ISO 8601 parser, Python's fromisoformat included, reads.
func isoTime(t time.Time) string {
	t = t.UTC()
	if t.Nanosecond()/1000 != 0 {
		return t.Format("2006-01-02T15:04:05.000000-07:00")
	}
	return t.Format("2006-01-02T15:04:05-07:00")
}

// entryTime is the modification time shown for e: its mtime, else its last
// change, else its creation (the root has none of them: the epoch).
func entryTime(e store.Entry) time.Time {
	for _, t := range []time.Time{e.MTime, e.Updated, e.Created} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Unix(0, 0)
}
