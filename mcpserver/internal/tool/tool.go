// Package tool is the one way a tool is declared and served: a Tool is a
// spec (built from its documents by Docs.Spec), a profile, the path
// arguments it declares, a reply shape and a body. Runtime.Handler wraps
// every tool in the same pipeline: rate limit, grants for the tool, the
// body, the check of every decoded path argument, the audit record and
// log line, and the reply in the tool's shape.
//
// A body receives only its Call, whose Store method is the guarded store:
// every operation is checked against the caller's grants first. The
// unguarded store.Store lives in an unexported field of Runtime, so no
// package outside this one can reach it (the compiler enforces it).
package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
)

// Profile names a set of tools the server offers. A Profile is a plain
// string, safe to share between goroutines.
type Profile string

// The tool profiles, documented where package mcpserver exports them.
const (
	ProfileGuide    Profile = "guide"
	ProfileProvider Profile = "provider"
	ProfileFS       Profile = "fs"
)

// PathArg is one argument of a tool that names depot paths, and what the
// tool does there (a tool that both reads and removes, move's source,
// declares grant.ReadWrite). The permission checks and the audit rely on
// these declarations; a test checks that every path-like argument of every
// input schema is declared.
type PathArg struct {
	Name   string
	Access grant.Access
}

// Read, Write and ReadWrite declare a path argument with that access.
func Read(name string) PathArg { return PathArg{Name: name, Access: grant.Read} }

// Write declares a path argument the tool writes.
func Write(name string) PathArg { return PathArg{Name: name, Access: grant.Write} }

// ReadWrite declares a path argument the tool reads and changes.
func ReadWrite(name string) PathArg { return PathArg{Name: name, Access: grant.ReadWrite} }

// Func is the body of a tool: it validates the raw arguments, does the work
// through c.Store() and returns the reply data, or an error the tool's
// reply shape turns into its error object (Classify names its type in the
// log and audit).
type Func func(ctx context.Context, c *Call, args json.RawMessage) (Reply, error)

// Tool is one tool the server registers: its definition, the profile it
// belongs to, its path arguments, the shape of its replies and its body.
// Every tool is served through Runtime.Handler. A Tool is immutable once
// built.
type Tool struct {
	Spec    mcp.Tool
	Profile Profile
	Paths   []PathArg
	Shape   Shape
	Run     Func
	// Docs are the documents the spec was built from, and the examples.
	Docs *Docs
}

// def is what the permission checks need to know of t: a grant may name
// the tool or its profile, and each path argument needs its access; and
// the input schema its decoder reads. A schema that does not parse is a
// build defect, so def panics; the tests build every tool.
func (t Tool) def() def {
	d := def{name: t.Spec.Name, group: string(t.Profile), paths: make(map[string]grant.Access, len(t.Paths))}
	if len(t.Spec.RawInputSchema) > 0 {
		schema, err := args.ParseSchema(t.Spec.RawInputSchema)
		if err != nil {
			panic(fmt.Sprintf("mcpserver: %s: %v", t.Spec.Name, err))
		}
		d.args = schema
	}
	for _, p := range t.Paths {
		d.paths[p.Name] = p.Access
	}
	return d
}

// Reply is what a tool body returns on success; the shape renders it.
type Reply struct {
	// Data is the tool's result: the envelope's data, or the contract's
	// reply value.
	Data any
	// Message, Warnings and Stats fill the envelope of guide tools; the
	// other shapes ignore them.
	Message  string
	Warnings []string
	Stats    map[string]any
	// Links are resource links every shape sends after its reply's text
	// (Call.FileLink).
	Links []mcp.ResourceLink
}

// Shape turns a tool's outcome into its reply: the envelope for the guide
// tools, the contract's own shapes for the provider and fs profiles.
// Implementations are stateless values, safe for concurrent use.
type Shape interface {
	// Success renders the reply of a call whose body returned out. An
	// error means out could not be encoded; the call then fails.
	Success(c *Call, out Reply) (*mcp.CallToolResult, error)
	// Failure renders the reply of a call that failed with err, with
	// isError set (except where a contract forbids errors).
	Failure(c *Call, err error) *mcp.CallToolResult
}
