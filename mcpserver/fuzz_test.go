package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver"
)

var fuzzTools = []string{"guide_cache_file", "guide_list_directory", "guide_read_file", "guide_pending_requests", "guide_cache_stats", "guide_snapshot", "guide_restore"}

// lastRecord is an Auditor that keeps only a count and the last record,
// so a long fuzz run does not grow.
type lastRecord struct {
	mu   sync.Mutex
	n    int
	last audit.Record
}

func (l *lastRecord) Append(r *audit.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	l.last = *r
	return nil
}

func (l *lastRecord) AppendDeferred(r *audit.Record) error { return l.Append(r) }

func (l *lastRecord) Err() error { return nil }

func (l *lastRecord) get() (int, audit.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n, l.last
}

// FuzzToolArguments sends arbitrary JSON as a tool's arguments. Whatever
// arrives, the reply is a well-formed envelope that matches the tool's output
// schema, a refused call leaves the store's revision unchanged, and the call
// leaves exactly one audit record. The high bit of the tool byte makes the
// caller an agent granted only /projects/a (with /projects/a/secret denied
// by the host): a call of that agent that succeeds touched only paths
// inside its grant. The seed corpus is in testdata/fuzz/FuzzToolArguments.
func FuzzToolArguments(f *testing.F) {
	seeds := []struct {
		tool byte
		args string
	}{
		{0, `{"path":"/a.txt","content":"hello"}`},
		{0, `{"filename":"C:\\x\\y.bin","content":"AAEC","encoding":"base64","sha256":"AE4B3280E56E2FAF83F414A6E3DABE9D5FBE18976544C05FED121ACCB85B53FC"}`},
		{0, `{"path":"/m","content":"","mtime":1714564800.25,"mode":"0640"}`},
		{0, `{"path":"/a\ud800b","content":"x"}`},
		{0, "{\"path\":\"/\xff\",\"content\":\"x\"}"},
		{0, `{"path":"../x","content":"x","path":"/y"}`},
		{1, `{"path":"/d","pattern":"*.go","entries":[{"name":"a.go","type":"file","size":3},{"name":"s","type":"directory","entries":[{"name":"b.txt","type":"file"}]}]}`},
		{1, `{"path":"/d","entries":[{"name":"../../x","type":"file"}]}`},
		{2, `{"path":"/c","upload_id":"u","chunk_index":1,"chunk_count":2,"content":"YQ==","encoding":"base64","sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}`},
		{2, `{"path":"/c","upload_id":"u","chunk_index":1e0,"chunk_count":2.0,"content":"a","sha256":"CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB","chunk_sha256":"00"}`},
		{2, `[]`},
		{2, `null`},
		{0x80, `{"path":"/projects/a/x","content":"x"}`},
		{0x80, `{"path":"/projects/abc","content":"x"}`},
		{0x81, `{"path":"/projects/a","entries":[{"name":"secret/k","type":"file"}]}`},
		{0, `{"path":"/t","content":"x","ttl_seconds":60,"pin":true}`},
		{2, `{"path":"/c","upload_id":"v","chunk_index":0,"chunk_count":1,"content":"a","total_size":1,"sha256":"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"}`},
		{3, `{"wait_seconds":60,"cursor":"lq3x9k2m1f-4"}`},
		{3, `{"cursor":""}`},
		{4, `{}`},
		{5, `{"action":"create","name":"s1","path":"/projects/a","ttl_seconds":60}`},
		{5, `{"action":"delete","name":"../x"}`},
		{5, `{"action":"list","path":"/"}`},
		{0x85, `{"action":"create","name":"s2","path":"/projects/a/secret"}`},
		{0x85, `{"action":"delete","name":"s1"}`},
		{6, `{"path":"/a.txt","revision":1}`},
		{6, `{"path":"/a.txt","snapshot":"s1","revision":2}`},
		{0x86, `{"path":"/projects/a/secret/k","snapshot":"s1"}`},
	}
	for _, s := range seeds {
		f.Add(s.tool, []byte(s.args))
	}
	host, err := policy.NewHost(nil, []string{"/projects/a/secret"})
	if err != nil {
		f.Fatal(err)
	}
	rec := &lastRecord{}
	h := newHarness(f, &mcpserver.Options{
		Policy:   host,
		Audit:    rec,
		Rate:     ratelimit.Limits{Calls: -1, Bytes: -1},
		Settings: mcpserver.Settings{MountPoint: testMount},
	})
	full := h.ctx
	restricted := identity.NewContext(context.Background(), agent(f, "fuzz", "guide:/projects/a:rw"))
	h.srv.Close() // long polls return at once; every tool still answers
	f.Fuzz(func(t *testing.T, tool byte, args []byte) {
		if !json.Valid(args) {
			t.Skip("the client cannot send invalid JSON")
		}
		h.t, h.ctx = t, full
		if tool&0x80 != 0 {
			h.ctx = restricted
		}
		rev := h.revision()
		before, _ := rec.get()
		name := fuzzTools[int(tool&0x7f)%len(fuzzTools)]
		if overflowsFloat64(args) {
			// mcp-go decodes the arguments into float64s before any
			// handler runs and refuses the whole request: a protocol
			// error, audited by the refusal hook, that changes nothing.
			req := mcp.CallToolRequest{}
			req.Params.Name = name
			req.Params.Arguments = json.RawMessage(args)
			if _, err := h.client.CallTool(h.ctx, req); err == nil {
				t.Fatalf("a call with a number beyond float64 was accepted")
			}
			if after, r := rec.get(); after != before+1 || r.Error != "validation" || h.revision() != rev {
				t.Fatalf("refused request: %d audit records, last %+v; revision %d -> %d", after-before, r, rev, h.revision())
			}
			return
		}
		env := h.call(name, json.RawMessage(args))
		if !env.Success && h.revision() != rev {
			t.Fatalf("a refused call (%s) changed the store", env.Error.Message)
		}
		after, r := rec.get()
		if after != before+1 {
			t.Fatalf("%d audit records for one call", after-before)
		}
		if env.Success != (r.Error == "") || env.Success && r.Decision != audit.Allow {
			t.Fatalf("reply success=%v but audit record %+v", env.Success, r)
		}
		if tool&0x80 != 0 && env.Success {
			for _, p := range r.Paths {
				if !depotpath.Within(p, "/projects/a") || depotpath.Within(p, "/projects/a/secret") {
					t.Fatalf("the agent granted /projects/a (without its secret) wrote %s", p)
				}
			}
		}
	})
}

// overflowsFloat64 reports whether the JSON value raw holds a number that
// does not fit a float64 (1e700), which mcp-go cannot decode.
func overflowsFloat64(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return false
		}
		if n, ok := tok.(json.Number); ok {
			if _, err := strconv.ParseFloat(string(n), 64); err != nil {
				return true
			}
		}
	}
}
