package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
)

// testMount is the mount point the harness pretends the depot is mounted at.
const testMount = "/mnt/depot"

// tester is the identity of the harness's in-process calls: an in-process
// client has no transport to vouch for it, so the harness puts this one in
// its context. It has full grants; tests of permissions make their own.
var tester = identity.Identity{Transport: "test", Subject: "tester", Full: true}

// testerCtx carries tester, for clients whose calls need an identity with
// every grant.
var testerCtx = identity.NewContext(context.Background(), tester)

// harness is a Server over a real bolt store in a temporary directory, with
// an initialized in-process client.
type harness struct {
	t      testing.TB
	dir    string // host directory of the database
	st     *bolt.Store
	srv    *mcpserver.Server
	client *client.Client
	ctx    context.Context
	logs   *syncBuffer
	broker *fetch.Broker // nil unless started with a fetch timeout

	mu      sync.Mutex
	applied []uint64

	schemas *replySchemas // output schema per tool
}

// newHarness starts a harness with an in-process client. opts may be nil
// for a server mounted at testMount; the harness sets the logger and, unless
// opts has one, an Applied that records revisions.
func newHarness(t testing.TB, opts *mcpserver.Options) *harness {
	t.Helper()
	return newHarnessOver(t, opts, "inprocess")
}

// newHarnessOver starts a harness whose client connects over transport:
// "inprocess", "http" (a real HTTP server on loopback) or "stdio" (pipes).
func newHarnessOver(t testing.TB, opts *mcpserver.Options, transport string) *harness {
	t.Helper()
	return startHarness(t, harnessConfig{opts: opts, transport: transport})
}

// harnessConfig is everything a harness can be started with. A zero
// transport is "inprocess"; a positive fetchTimeout gives the server a
// fetch broker over the harness's store (harness.broker).
type harnessConfig struct {
	opts         *mcpserver.Options
	transport    string
	store        *bolt.Options
	fetchTimeout time.Duration
}

func startHarness(t testing.TB, cfg harnessConfig) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "depot.db"), cfg.store)
	if err != nil {
		t.Fatalf("bolt.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{t: t, dir: dir, st: st, ctx: identity.NewContext(context.Background(), tester), logs: &syncBuffer{}}
	o := mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}}
	if cfg.opts != nil {
		o = *cfg.opts
	}
	if cfg.fetchTimeout > 0 {
		h.broker = fetch.New(st, &fetch.Options{Timeout: cfg.fetchTimeout, Logger: slog.New(slog.NewJSONHandler(h.logs, nil))})
		t.Cleanup(func() { h.broker.Close() })
		o.Requests = h.broker
	}
	transport := cfg.transport
	if transport == "" {
		transport = "inprocess"
	}
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, nil))
	if o.Applied == nil {
		o.Applied = func(ctx context.Context, rev uint64) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.applied = append(h.applied, rev)
			return nil
		}
	}
	h.srv = mcpserver.New(st, &o)
	t.Cleanup(func() { h.srv.Close() })
	switch transport {
	case "inprocess":
		h.client = startClientAs(t, mustInProcess(t, h.srv), h.ctx)
	case "http":
		h.client = startClient(t, httpClient(t, h.srv))
	case "stdio":
		h.client = startClient(t, stdioClient(t, h.srv))
	default:
		t.Fatalf("unknown transport %q", transport)
	}
	h.schemas = newReplySchemas(h.srv)
	return h
}

func mustInProcess(t testing.TB, srv *mcpserver.Server) *client.Client {
	t.Helper()
	c, err := client.NewInProcessClient(srv.MCP())
	if err != nil {
		t.Fatalf("NewInProcessClient: %v", err)
	}
	return c
}

// httpClient serves srv.Handler on a loopback test server and returns a
// streamable HTTP client for it.
func httpClient(t testing.TB, srv *mcpserver.Server) *client.Client {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	c, err := client.NewStreamableHttpClient(ts.URL)
	if err != nil {
		t.Fatalf("NewStreamableHttpClient: %v", err)
	}
	return c
}

// stdioClient runs srv.ServeStdio on a pair of pipes and returns a client
// speaking to it. At cleanup, after the client has closed its end, the
// server must return nil.
func stdioClient(t testing.TB, srv *mcpserver.Server) *client.Client {
	t.Helper()
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), toServer, fromServer) }()
	t.Cleanup(func() {
		// Runs after the client's Close (cleanups run last first), which
		// closed fromClient: the server sees end of input and returns.
		if err := <-done; err != nil {
			t.Errorf("ServeStdio: %v", err)
		}
		fromServer.Close()
	})
	return client.NewClient(transport.NewIO(toClient, fromClient, nil))
}

// startClient starts and initializes c and closes it at cleanup.
func startClient(t testing.TB, c *client.Client) *client.Client {
	t.Helper()
	return startClientAs(t, c, context.Background())
}

// startClientAs is startClient with ctx, which carries the identity of an
// in-process client's calls.
func startClientAs(t testing.TB, c *client.Client, ctx context.Context) *client.Client {
	t.Helper()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("client Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpserver-test", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("client Initialize: %v", err)
	}
	return c
}

// replySchemas are the compiled output schemas of the tools a server
// serves. tools/list sends them only with Settings.OutputSchemas; every
// checked reply must satisfy its tool's. Each is built when a reply of its tool is first checked: a
// test calls a few of the dozens of tools, and building them all was most
// of the CPU a small test spent. It is safe for concurrent use.
type replySchemas struct {
	srv *mcpserver.Server
	mu  sync.Mutex
	m   map[string]*jsonschema.Schema // guarded by mu; nil: the tool has none
}

func newReplySchemas(srv *mcpserver.Server) *replySchemas {
	return &replySchemas{srv: srv, m: map[string]*jsonschema.Schema{}}
}

// of returns the compiled output schema of tool, nil if it has none.
func (r *replySchemas) of(t testing.TB, tool string) *jsonschema.Schema {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if sch, ok := r.m[tool]; ok {
		return sch
	}
	var sch *jsonschema.Schema
	if raw, ok := mcpserver.OutputSchema(r.srv, tool); ok {
		sch = compileSchema(t, tool+"-output", raw)
	}
	r.m[tool] = sch
	return sch
}

// compiledSchemas holds compileSchema's results by name and schema text:
// every harness checks replies against the same few dozen schemas, and
// compiling them again was most of the CPU a small test spent (a tenth of
// a second per harness under -race). A compiled schema is only read after,
// and Validate is safe for concurrent use.
var compiledSchemas sync.Map // name + "\n" + raw → *jsonschema.Schema

func compileSchema(t testing.TB, name string, raw json.RawMessage) *jsonschema.Schema {
	t.Helper()
	key := name + "\n" + string(raw)
	if sch, ok := compiledSchemas.Load(key); ok {
		return sch.(*jsonschema.Schema)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: schema is not JSON: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: schema does not compile: %v", name, err)
	}
	compiledSchemas.Store(key, sch)
	return sch
}

// envelope mirrors the reply envelope on the wire.
type envelope struct {
	Success  bool            `json:"success"`
	Data     json.RawMessage `json:"data"`
	Message  string          `json:"message"`
	Warnings []string        `json:"warnings"`
	Stats    map[string]any  `json:"stats"`
	Error    *struct {
		Type        string `json:"type"`
		Message     string `json:"message"`
		Instruction string `json:"instruction"`
	} `json:"error"`
}

// fileReply mirrors the data of a stored file.
type fileReply struct {
	Status    string `json:"status"`
	Key       string `json:"key"`
	Path      string `json:"path"`
	MountPath string `json:"mount_path"`
	SHA256    string `json:"sha256"`
	Size      int64  `json:"size"`
	Updates   uint64 `json:"updates"`
	Revision  uint64 `json:"revision"`
	MTime     string `json:"mtime"`
	Mode      string `json:"mode"`
	Encoding  string `json:"encoding"`
	Filename  string `json:"filename"`
	Pinned    bool   `json:"pinned"`
	Upload    *struct {
		UploadID string `json:"upload_id"`
		Received int    `json:"received"`
		Count    int    `json:"count"`
		Bytes    int64  `json:"bytes"`
		Complete bool   `json:"complete"`
	} `json:"upload"`
}

// listReply mirrors the data of guide_list_directory.
type listReply struct {
	Path         string   `json:"path"`
	MountPath    string   `json:"mount_path"`
	Declared     int      `json:"declared"`
	Files        int      `json:"files"`
	Directories  int      `json:"directories"`
	Created      int      `json:"created"`
	Stale        int      `json:"stale"`
	Unchanged    int      `json:"unchanged"`
	Refused      int      `json:"refused"`
	RefusedPaths []string `json:"refused_paths"`
	Revision     uint64   `json:"revision"`
}

// call calls a tool with args (a map, or a json.RawMessage sent verbatim)
// and checks the reply's invariants: one text block equal to the structured
// content, isError matching success, an error exactly on failure with a
// message and an instruction, and structured content valid against the
// tool's output schema.
func (h *harness) call(tool string, args any) envelope {
	h.t.Helper()
	return checkedCall(h.t, h.ctx, h.client, h.schemas, tool, args)
}

func checkedCall(t testing.TB, ctx context.Context, c *client.Client, schemas *replySchemas, tool string, args any) envelope {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("CallTool %s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1 text block", tool, len(res.Content))
	}
	text, ok := res.Content[0].(mcp.TextContent)
	if !ok {
		t.Fatalf("%s: content is %T, want text", tool, res.Content[0])
	}
	var fromText, fromStruct any
	if err := json.Unmarshal([]byte(text.Text), &fromText); err != nil {
		t.Fatalf("%s: text is not JSON: %v\n%s", tool, err, text.Text)
	}
	if err := json.Unmarshal(res.RawStructuredContent, &fromStruct); err != nil {
		t.Fatalf("%s: structured content is not JSON: %v", tool, err)
	}
	if !reflect.DeepEqual(fromText, fromStruct) {
		t.Fatalf("%s: text and structured content differ:\n%s\n%s", tool, text.Text, res.RawStructuredContent)
	}
	if sch := schemas.of(t, tool); sch != nil {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(res.RawStructuredContent))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Fatalf("%s: reply does not match the output schema: %v\n%s", tool, err, res.RawStructuredContent)
		}
	}
	var env envelope
	if err := json.Unmarshal(res.RawStructuredContent, &env); err != nil {
		t.Fatalf("%s: envelope: %v", tool, err)
	}
	if res.IsError == env.Success {
		t.Fatalf("%s: isError %v with success %v", tool, res.IsError, env.Success)
	}
	if env.Success != (env.Error == nil) {
		t.Fatalf("%s: success %v with error %+v", tool, env.Success, env.Error)
	}
	if env.Error != nil && (env.Error.Message == "" || env.Error.Instruction == "") {
		t.Fatalf("%s: error without message or instruction: %+v", tool, env.Error)
	}
	if env.Warnings == nil || env.Stats == nil || env.Message == "" {
		t.Fatalf("%s: envelope lacks warnings, stats or message: %s", tool, res.RawStructuredContent)
	}
	return env
}

// ok calls a tool that must succeed and decodes its data into data.
func (h *harness) ok(tool string, args any, data any) envelope {
	h.t.Helper()
	env := h.call(tool, args)
	if !env.Success {
		h.t.Fatalf("%s failed: %s: %s", tool, env.Error.Type, env.Error.Message)
	}
	if data != nil {
		if err := json.Unmarshal(env.Data, data); err != nil {
			h.t.Fatalf("%s: data: %v", tool, err)
		}
	}
	return env
}

// fail calls a tool that must fail with the given error type.
func (h *harness) fail(tool string, args any, wantType string) envelope {
	h.t.Helper()
	env := h.call(tool, args)
	if env.Success {
		h.t.Fatalf("%s succeeded, want a %s error; data %s", tool, wantType, env.Data)
	}
	if env.Error.Type != wantType {
		h.t.Fatalf("%s: error type %q (%s), want %q", tool, env.Error.Type, env.Error.Message, wantType)
	}
	return env
}

// revision returns the store's revision.
func (h *harness) revision() uint64 {
	h.t.Helper()
	rev, err := h.st.Revision(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return rev
}

// stat returns the entry at p, or ok false if there is none.
func (h *harness) stat(p string) (store.Entry, bool) {
	h.t.Helper()
	e, err := h.st.Stat(context.Background(), p)
	if errors.Is(err, store.ErrNotExist) {
		return store.Entry{}, false
	}
	if err != nil {
		h.t.Fatalf("Stat %s: %v", p, err)
	}
	return e, true
}

// read returns the stored content of p.
func (h *harness) read(p string) []byte {
	h.t.Helper()
	c, err := h.st.Open(context.Background(), p)
	if err != nil {
		h.t.Fatalf("Open %s: %v", p, err)
	}
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		h.t.Fatalf("read %s: %v", p, err)
	}
	return b
}

// appliedRevisions returns the revisions Options.Applied was called with.
func (h *harness) appliedRevisions() []uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]uint64(nil), h.applied...)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// httptestServer serves srv.Handler on loopback and returns its URL.
func httptestServer(t testing.TB, srv *mcpserver.Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// pipe returns the two ends of an in-memory pipe, closed at cleanup.
func pipe(t testing.TB) (*io.PipeReader, *io.PipeWriter) {
	r, w := io.Pipe()
	t.Cleanup(func() { w.Close() })
	return r, w
}

// discard is an io.Writer that drops everything.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
