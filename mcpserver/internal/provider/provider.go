// Package provider holds the seven tools of the file-provider contract a
// scanner calls (read_file, read_file_binary, list_directory, file_exists,
// get_file_stats, calculate_file_hash, find_files), served read-only from
// the depot with the contract's own reply shapes: the value itself, or
// {"error", "error_type"} (errmap.go).
package provider

import (
	"context"
	"embed"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// docs are the tools' documents in the layout of tool.Docs; the reply
// frame is the result or the contract's error object.
//
//go:embed doc
var docs embed.FS

// tools builds the provider tools; its methods are their bodies.
type tools struct {
	opts *tool.Env
	docs *tool.Docs
}

// Tools returns the tools of the provider profile, over env. All of them
// only read the depot.
func Tools(env *tool.Env) []tool.Tool {
	s := &tools{opts: env}
	s.docs = tool.NewDocs(docs, "doc", "result", map[string]string{"error": "error.json"}, env)
	r := tool.Read
	return s.docs.Tools(
		tool.InSnapshots(s.providerTool("read_file", "Read a text file from the depot", r("file_path"), providerShape{field: "content"}, s.readFile(true))),
		tool.InSnapshots(s.providerTool("read_file_binary", "Read a file from the depot as base64", r("file_path"), providerShape{field: "base64"}, s.readFile(false))),
		tool.InSnapshots(s.providerTool("list_directory", "List a depot directory", r("directory_path"), providerShape{field: "paths"}, s.providerListDirectory)),
		s.providerTool("file_exists", "Check whether a depot path exists", r("path"), providerShape{field: "exists", falseOnError: true}, s.providerFileExists),
		s.providerTool("get_file_stats", "Get a depot entry's statistics", r("path"), providerShape{}, s.providerFileStats),
		s.providerTool("calculate_file_hash", "Hash a file in the depot", r("file_path"), providerShape{field: "digest"}, s.providerFileHash),
		s.providerTool("find_files", "Find files in the depot by name", r("directory_path"), providerShape{field: "paths"}, s.providerFindFiles),
	)
}

// providerTool builds one provider tool: read-only, idempotent, closed
// world. Every one has an output schema (<name>.output.json). A tool whose
// contract returns an object (get_file_stats) sends it as structured
// content always; one whose contract returns a bare value (shape.field
// set) sends structured content only with Settings.OutputSchemas, the
// value under shape.field, since the schema it then declares obliges it
// to: the default reply stays the contract's text alone.
func (s *tools) providerTool(name, title string, path tool.PathArg, shape providerShape, run tool.Func) tool.Tool {
	spec := s.docs.Spec(name, title, tool.Hints{ReadOnly: true, Idempotent: true})
	if !s.docs.HasOutputSchema(name) {
		panic("mcpserver: provider tool " + name + " has no output schema")
	}
	shape.structured = shape.field == "" || s.opts.OutputSchemas
	return tool.Tool{
		Spec:    spec,
		Profile: tool.ProfileProvider,
		Paths:   []tool.PathArg{path},
		Shape:   shape,
		Run:     run,
	}
}

// providerShape renders provider replies. A value that is a string (file
// text, base64, a hex digest) is the text content as is; any other value
// (a list of paths, a boolean, a stats object) is its JSON. A failure is
// the contract's {"error", "error_type"} object as JSON text, with isError
// set so that MCP clients and models see the call failed, and the same
// object as structured content.
type providerShape struct {
	// structured: the reply carries structured content: the value itself
	// when it is an object, else {field: value}.
	structured bool
	// field names the property of the structured content that holds a
	// bare value (a string, a list, a boolean); "" when the value is an
	// object. A read answered with a resource link has {"link", "size",
	// "sha256"} instead.
	field string
	// falseOnError: the contract forbids errors (file_exists): every
	// failure except malformed arguments answers false.
	falseOnError bool
}

var _ tool.Shape = providerShape{}

// Success renders out.Data as the contract's value.
func (p providerShape) Success(c *tool.Call, out tool.Reply) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	if text, ok := out.Data.(string); ok {
		res = tool.WithLinks(&mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(text)}}, out)
	} else {
		raw, err := json.Marshal(out.Data)
		if err != nil {
			return nil, err
		}
		res = &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(raw))}}
		if p.structured && p.field == "" {
			res.StructuredContent = json.RawMessage(raw)
		}
	}
	if p.structured && p.field != "" {
		if len(out.Links) > 0 {
			res.StructuredContent = map[string]any{"link": out.Links[0].URI, "size": c.Size, "sha256": c.SHA256}
		} else {
			res.StructuredContent = map[string]any{p.field: out.Data}
		}
	}
	return res, nil
}

// Failure renders err as the contract's error object (errmap.go).
func (p providerShape) Failure(c *tool.Call, err error) *mcp.CallToolResult {
	if p.falseOnError && !args.IsError(err) {
		res, _ := p.Success(c, tool.Reply{Data: false})
		return res
	}
	typ, msg := providerFailure(err)
	res, _ := providerShape{structured: true}.Success(c, tool.Reply{Data: map[string]string{"error": msg, "error_type": typ}})
	res.IsError = true
	return res
}

// providerPath is a path argument of the provider profile: the depot path
// it names, the tree it is read in and how to show paths back to the
// caller.
type providerPath struct {
	depot string // clean depot path
	field string // the argument it came from
	// mount is the host mount point when the caller named the entry under
	// it ("/mnt/depot/a/b"); replies then name entries the same way.
	mount string
	// place is where the path is read (locate): the live tree, or a
	// snapshot's named by a /.snapshots/NAME path or the snapshot
	// argument.
	place tool.Place
}

// show returns depot path p as the caller names entries.
func (p providerPath) show(depot string) string {
	shown := p.place.Show(depot)
	if p.mount == "" {
		return shown
	}
	return filepath.Join(p.mount, filepath.FromSlash(shown))
}

// locate resolves p (decoded) to the tree it is read in, given the
// snapshot argument snap ("" when absent), and sets the call's path.
func (s *tools) locate(ctx context.Context, c *tool.Call, p *providerPath, snap string) error {
	pl, err := c.Store().Locate(ctx, p.field, p.depot, snap)
	if err != nil {
		return err
	}
	p.place, p.depot, c.Path = pl, pl.Path, pl.Path
	return nil
}

// tree returns the tree p is read in.
func (p providerPath) tree(c *tool.Call) tool.Tree { return c.Store().Tree(p.place) }

// providerPath returns the path argument field, decoded as the depot path
// p ("" when it was refused): a depot path ("/a/b", or "a/b" from the
// root), or the same entry under Options.MountPoint ("/mnt/depot/a/b"),
// which is stripped. A host path outside the mount point is taken as a
// depot path: it can only name depot entries.
func (s *tools) providerPath(field, p string) providerPath {
	if p == "" {
		return providerPath{field: field}
	}
	if in, ok := args.UnderMount(p, s.opts.MountPoint); ok {
		return providerPath{depot: in, field: field, mount: s.opts.MountPoint}
	}
	return providerPath{depot: p, field: field}
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
