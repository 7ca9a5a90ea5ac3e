// Package tooltest runs the tools of one profile package through the one
// tool pipeline (tool.Runtime.Handler) over a real store, for the unit
// tests of the profile packages (guide, fstools, provider): the same
// decoding, grants, reply shapes and error texts an MCP client gets, each
// structured reply checked against its tool's output schema,
// without the MCP server or a transport. The store is the caller's (a
// bolt store in a temporary directory): no package under mcpserver may
// import a store implementation, tests included only through their own
// files.
package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// Mount is the mount point the harness's tools are told about.
const Mount = "/mnt/depot"

// Env returns the settings the server would use by default, with the
// depot mounted at Mount, resource links off (there is no listener) and
// the logs discarded.
func Env() *tool.Env {
	return &tool.Env{
		Uploads: "/uploads",
		Settings: tool.Settings{
			MountPoint:               Mount,
			Logger:                   slog.New(slog.NewTextHandler(io.Discard, nil)),
			MaxContentBytes:          8 << 20,
			MaxChunks:                10000,
			MaxBatchFiles:            1000,
			MaxBatchBytes:            8 << 20,
			UploadURLTTL:             time.Hour,
			MaxRawUploadsPerIdentity: 16,
			MaxSnapshotsPerIdentity:  8,
			KeepVersions:             3,
			UploadTTL:                24 * time.Hour,
			MaxListEntries:           1000,
			MaxReadBytes:             10 << 20,
			Now:                      time.Now,
			CommitTimeout:            time.Minute,
			LinkMinBytes:             -1,
		},
	}
}

// Harness serves a profile's tools over a store. Not safe for concurrent
// use: one test drives it.
type Harness struct {
	t     testing.TB
	st    store.Store
	rt    *tool.Runtime
	ctx   context.Context
	tools map[string]tool.Tool
	// outputs are the compiled output schemas, by tool, as they are
	// first needed.
	outputs map[string]*jsonschema.Schema
}

// New serves the tools build returns (a profile package's Tools, given
// the environment and the runtime) over st with env (Env() when nil), to
// the local user on stdio, who has full grants. With Env(), the errors the
// pipeline logs (a panic, a decoder that disagrees with its input schema)
// go to the test's log, since the reply only says "failed internally".
func New(t testing.TB, st store.Store, env *tool.Env, build func(env *tool.Env, rt *tool.Runtime) []tool.Tool) *Harness {
	t.Helper()
	if env == nil {
		env = Env()
		env.Logger = slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	}
	host, err := policy.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt := tool.NewRuntime(st, env, host, nil, ratelimit.Limits{})
	h := &Harness{t: t, st: st, rt: rt, ctx: identity.NewContext(t.Context(), identity.Stdio()), tools: map[string]tool.Tool{}, outputs: map[string]*jsonschema.Schema{}}
	for _, tl := range build(env, rt) {
		h.tools[tl.Spec.Name] = tl
	}
	return h
}

// testLog writes to a test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// Tool returns the tool named name; the test fails when there is none.
func (h *Harness) Tool(name string) tool.Tool {
	h.t.Helper()
	tl, ok := h.tools[name]
	if !ok {
		h.t.Fatalf("no tool %s", name)
	}
	return tl
}

// Result is a tool's reply as a client reads it.
type Result struct {
	Text       string          // the text of its content blocks, joined
	IsError    bool            // isError
	Structured json.RawMessage // its structured content, nil when none
}

// Call calls tool name with args, the raw JSON text of its arguments
// (so that the test controls types, duplicate keys and invalid text).
func (h *Harness) Call(name, args string) Result {
	h.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = name
	req.Params.RawArguments = json.RawMessage(args)
	res, err := h.rt.Handler(h.Tool(name))(h.ctx, req)
	if err != nil || res == nil {
		h.t.Fatalf("%s %s: %v (a handler never fails)", name, args, err)
	}
	out := Result{IsError: res.IsError}
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			out.Text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			h.t.Fatalf("%s: structured content: %v", name, err)
		}
		out.Structured = raw
		h.checkOutput(name, raw)
	}
	return out
}

// checkOutput fails the test unless the structured content raw of a reply
// of tool name satisfies the tool's output schema, which every tool has.
func (h *Harness) checkOutput(name string, raw json.RawMessage) {
	h.t.Helper()
	sch, ok := h.outputs[name]
	if !ok {
		doc, has := h.Tool(name).Docs.OutputSchema(name)
		if !has {
			h.t.Fatalf("%s: structured content, but no output schema (doc/%s.output.json)", name, name)
		}
		parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
		if err != nil {
			h.t.Fatalf("%s: output schema: %v", name, err)
		}
		c := jsonschema.NewCompiler()
		url := "mem:///" + name + ".output.json"
		if err := c.AddResource(url, parsed); err != nil {
			h.t.Fatalf("%s: output schema: %v", name, err)
		}
		if sch, err = c.Compile(url); err != nil {
			h.t.Fatalf("%s: output schema does not compile: %v", name, err)
		}
		h.outputs[name] = sch
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		h.t.Fatalf("%s: structured content: %v", name, err)
	}
	if err := sch.Validate(inst); err != nil {
		h.t.Fatalf("%s: the reply does not satisfy the output schema: %v\n%s", name, err, raw)
	}
}

// Put stores content at p directly in the store, as setup.
func (h *Harness) Put(p, content string) store.PutResult {
	h.t.Helper()
	res, err := h.st.Put(h.t.Context(), store.PutRequest{Path: p, Data: []byte(content)})
	if err != nil {
		h.t.Fatalf("put %s: %v", p, err)
	}
	return res
}

// Revision returns the store's current revision: any change moves it.
func (h *Harness) Revision() uint64 {
	h.t.Helper()
	rev, err := h.st.Revision(h.t.Context())
	if err != nil {
		h.t.Fatal(err)
	}
	return rev
}
