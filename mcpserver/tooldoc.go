package mcpserver

import (
	"embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// toolDocs holds each tool's description (<tool>.md), input schema
// (<tool>.input.json) and reply data schema (<tool>.data.json), plus the
// envelope schema and the file data schema they share. Placeholders such as
// {{max_content}} are replaced with the configured limits.
//
//go:embed tooldoc
var toolDocs embed.FS

// toolKind says how a tool treats the depot, for its annotations.
type toolKind int

const (
	// writes: the tool changes the depot (and may replace what a path
	// held); repeating a call with the same arguments is harmless.
	writes toolKind = iota
	// readOnly: the tool only reads.
	readOnly
)

// toolSpec builds a tool's definition from its documents. Every tool
// touches only the depot (open world false) and may be repeated
// (idempotent). A missing or malformed document is a build defect, so it
// panics; the tests load every tool.
func (s *Server) toolSpec(name, title string, kind toolKind) mcp.Tool {
	input := s.doc(name + ".input.json")
	if !json.Valid([]byte(input)) {
		panic(fmt.Sprintf("mcpserver: %s input schema is not valid JSON", name))
	}
	return mcp.Tool{
		Name:            name,
		Title:           title,
		Description:     s.doc(name + ".md"),
		RawInputSchema:  json.RawMessage(input),
		RawOutputSchema: s.outputSchema(name),
		Annotations: mcp.ToolAnnotation{
			Title:           title,
			ReadOnlyHint:    mcp.ToBoolPtr(kind == readOnly),
			DestructiveHint: mcp.ToBoolPtr(kind == writes),
			IdempotentHint:  mcp.ToBoolPtr(true),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		},
	}
}

// outputSchema returns the envelope schema with the tool's data schema and
// the shared file data schema as definitions.
func (s *Server) outputSchema(name string) json.RawMessage {
	var env map[string]any
	var data, file any
	for doc, v := range map[string]any{
		"envelope.json":     &env,
		name + ".data.json": &data,
		"file.data.json":    &file,
	} {
		if err := json.Unmarshal([]byte(s.doc(doc)), v); err != nil {
			panic(fmt.Sprintf("mcpserver: tool document %s: %v", doc, err))
		}
	}
	defs, _ := env["$defs"].(map[string]any)
	defs["data"] = data
	defs["file"] = file
	out, err := json.Marshal(env)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: %s output schema: %v", name, err))
	}
	return out
}

// doc returns a tool document with its placeholders filled in.
func (s *Server) doc(name string) string {
	b, err := toolDocs.ReadFile("tooldoc/" + name)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: tool document %s: %v", name, err))
	}
	uploads := s.uploads
	if strings.HasSuffix(name, ".json") {
		quoted, _ := json.Marshal(uploads)
		uploads = string(quoted[1 : len(quoted)-1])
	}
	return strings.NewReplacer(
		"{{uploads}}", uploads,
		"{{max_content}}", strconv.FormatInt(s.opts.MaxContentBytes, 10),
		"{{max_chunks}}", strconv.Itoa(s.opts.MaxChunks),
		"{{max_entries}}", strconv.Itoa(s.opts.MaxListEntries),
		"{{max_file}}", s.maxFileDoc(),
		"{{max_ttl}}", strconv.Itoa(maxTTLSeconds),
		"{{upload_ttl}}", s.uploadTTLDoc(),
		"{{max_wait}}", strconv.Itoa(maxWaitSeconds),
		"{{fetch_timeout}}", s.fetchTimeoutDoc(),
		"{{pending_uri}}", pendingURI,
	).Replace(string(b))
}

// maxFileDoc describes the file size limit checked at the edge.
func (s *Server) maxFileDoc() string {
	if s.opts.MaxFileBytes <= 0 {
		return "the depot's file size limit (see guide_cache_stats)"
	}
	return strconv.FormatInt(s.opts.MaxFileBytes, 10) + " bytes"
}

// uploadTTLDoc describes the expiry of filename-only uploads.
func (s *Server) uploadTTLDoc() string {
	if s.opts.UploadTTL <= 0 {
		return "never (no upload expiry is configured)"
	}
	return fmt.Sprintf("%.0f seconds (%v)", s.opts.UploadTTL.Seconds(), s.opts.UploadTTL)
}

// fetchTimeoutDoc describes how long a program waits for a requested file.
func (s *Server) fetchTimeoutDoc() string {
	if s.opts.Requests == nil {
		return "the fetch timeout"
	}
	return s.opts.Requests.Timeout().String()
}
