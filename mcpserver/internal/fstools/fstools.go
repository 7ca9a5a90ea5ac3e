// Package fstools holds the nine tools of the filesystem contract (list,
// read, write, mkdir, delete, copy, move, info, search) over the depot
// namespace, with its reply objects and its {"error": {"code", "message",
// "details"}} errors (errmap.go). Paths are relative to the depot root, as
// the contract's are to its server root.
package fstools

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// docs are the tools' documents in the layout of tool.Docs; the reply
// frame is the result or the contract's error object.
//
//go:embed doc
var docs embed.FS

// tools builds the fs tools; its methods are their bodies.
type tools struct {
	opts *tool.Env
	docs *tool.Docs
	// appends queues appends to one path through this server, so that
	// they never lose the revision race to each other.
	appends pathLocks
}

// Tools returns the tools of the fs profile, over env.
func Tools(env *tool.Env) []tool.Tool {
	s := &tools{opts: env}
	s.docs = tool.NewDocs(docs, "doc", "result", map[string]string{"error": "error.json"}, env,
		"{{default_read}}", strconv.FormatInt(s.defaultReadBytes(), 10),
		"{{default_search_file}}", strconv.FormatInt(s.defaultSearchFileBytes(), 10),
	)
	r, w, rw := tool.Read, tool.Write, tool.ReadWrite
	readOnly := tool.Hints{ReadOnly: true, Idempotent: true}
	write := s.fsTool("write", "Write a file in the depot", tool.Hints{Destructive: true}, s.fsWrite, w("path"))
	write.Spec = tool.ConditionSchema(write.Spec)
	return s.docs.Tools(
		tool.InSnapshots(s.fsTool("list", "List a depot directory", readOnly, s.fsList, r("path"))),
		tool.InSnapshots(s.fsTool("read", "Read a depot file", readOnly, s.fsRead, r("path"))),
		write,
		s.fsTool("mkdir", "Create a depot directory", tool.Hints{Idempotent: true}, s.fsMkdir, w("path")),
		s.fsTool("delete", "Delete a depot file or directory", tool.Hints{Destructive: true, Idempotent: true}, s.fsDelete, w("path")),
		s.fsTool("copy", "Copy a depot file or directory", tool.Hints{Destructive: true, Idempotent: true}, s.fsTransfer(true), r("source"), w("destination")),
		s.fsTool("move", "Move or rename a depot file or directory", tool.Hints{Destructive: true, Idempotent: true}, s.fsTransfer(false), rw("source"), w("destination")),
		tool.InSnapshots(s.fsTool("info", "Describe a depot path", readOnly, s.fsInfo, r("path"))),
		s.fsTool("search", "Search depot files for text", readOnly, s.fsSearch, r("root_path")),
	)
}

// fsTool builds one fs tool.
func (s *tools) fsTool(name, title string, h tool.Hints, run tool.Func, paths ...tool.PathArg) tool.Tool {
	return tool.Tool{
		Spec:    s.docs.Spec(name, title, h),
		Profile: tool.ProfileFS,
		Paths:   paths,
		Shape:   fsShape{},
		Run:     run,
	}
}

// fsShape renders fs replies: the reply object as JSON text and as
// structured content; a failure as the contract's error object, the same
// way, with isError set.
type fsShape struct{}

var _ tool.Shape = fsShape{}

// Success renders out.Data as the contract's reply object.
func (fsShape) Success(_ *tool.Call, out tool.Reply) (*mcp.CallToolResult, error) {
	raw, err := json.Marshal(out.Data)
	if err != nil {
		return nil, err
	}
	return tool.WithLinks(&mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(raw))},
		StructuredContent: json.RawMessage(raw),
	}, out), nil
}

// Failure renders err as the contract's error object (errmap.go).
func (fsShape) Failure(c *tool.Call, err error) *mcp.CallToolResult {
	code, msg, path, extra := fsFailure(err)
	if path == "" && c.Path != "" {
		path = relPath(c.Path)
	}
	details := map[string]any{"operation": c.Name()}
	if path != "" {
		details["path"] = path
	}
	maps.Copy(details, extra)
	type failure struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	res, _ := fsShape{}.Success(c, tool.Reply{Data: map[string]failure{"error": {code, msg, details}}})
	res.IsError = true
	return res
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

// fsPath is a path argument, as args.Fill decodes it: relative to the
// depot root ("a/b"), or absolute in the depot ("/a/b"); "" and "." are
// the root. An absolute path under the server's mount point is refused,
// naming the depot path it shows: the contract's paths are relative to
// its root, and the reply has no warning to say that a mount path was
// translated. A plain value; tools.path sets the mount before decoding.
type fsPath struct {
	p     string // the clean depot path; "" when refused
	mount string
}

// path returns an fsPath to decode into.
func (s *tools) path() fsPath { return fsPath{mount: s.opts.MountPoint} }

// DecodeArg reads field into f.
func (f *fsPath) DecodeArg(o *args.Object, field string, required bool) {
	raw, ok := o.Raw(field)
	if ok && string(raw) == `""` {
		f.p = depotpath.Root
		return
	}
	f.p, _ = o.DepotPath(field, required)
	if in, ok := args.UnderMount(f.p, f.mount); ok {
		if str, _ := args.DecodeString(raw); strings.HasPrefix(str, "/") {
			o.Problems().Addf(o.Name(field), "%s is a path in the server's mount, not in the depot: send the depot path %s", args.Quote(str), args.Quote(relPath(in)))
			f.p = ""
		}
	}
}

// fsTime formats a time as the contract does: RFC 3339 in UTC.
func fsTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// fsMetadata is the metadata object of read and write replies.
type fsMetadata struct {
	Path     string `json:"path"`
	Modified string `json:"modified"`
	Size     int64  `json:"size"`
	// Beyond the contract: the store revision of the file's last change,
	// what write's if_revision compares.
	Revision uint64 `json:"revision"`
}

func newFSMetadata(e store.Entry) fsMetadata {
	return fsMetadata{Path: relPath(e.Path), Modified: fsTime(tool.EntryTime(e)), Size: e.Size, Revision: e.Revision}
}

// fsCommitted waits until the mount shows the store's current revision
// after a write, and returns the warnings to add to the reply.
func (s *tools) fsCommitted(ctx context.Context, c *tool.Call) []string {
	rev, err := c.Store().Revision(ctx)
	if err != nil {
		return []string{fmt.Sprintf("The change is stored, but its revision could not be read to wait for the mount: %v", tool.Classify(err).Message)}
	}
	return s.opts.WaitApplied(ctx, c, rev)
}
