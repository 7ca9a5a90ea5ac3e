package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver"
)

// recorder is an Auditor that keeps records in memory and fails on demand.
type recorder struct {
	mu        sync.Mutex
	recs      []audit.Record
	deferred  []bool // whether recs[i] came through AppendDeferred
	appendErr error  // returned by Append (the record is not kept)
	healthErr error  // returned by Err
}

func (r *recorder) Append(rec *audit.Record) error { return r.add(rec, false) }

func (r *recorder) AppendDeferred(rec *audit.Record) error { return r.add(rec, true) }

func (r *recorder) add(rec *audit.Record, deferred bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.appendErr != nil {
		return r.appendErr
	}
	rec.Seq = uint64(len(r.recs) + 1)
	r.recs = append(r.recs, *rec)
	r.deferred = append(r.deferred, deferred)
	return nil
}

func (r *recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.healthErr
}

func (r *recorder) fail(appendErr, healthErr error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.appendErr, r.healthErr = appendErr, healthErr
}

// records returns the records kept so far.
func (r *recorder) records() []audit.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

// since returns the records after the first n.
func (r *recorder) since(n int) []audit.Record { return r.records()[n:] }

// agent is an authenticated identity with the given grants.
func agent(t testing.TB, name string, grants ...string) identity.Identity {
	t.Helper()
	id := identity.Identity{Transport: "http", Subject: "depotfs://test/agent/" + name, Method: identity.MethodCert,
		Serial: "0a" + name, Remote: "192.0.2.1:4000", Grants: []grant.Grant{}}
	for _, s := range grants {
		g, err := grant.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		id.Grants = append(id.Grants, g)
	}
	return id
}

// enforced is a harness whose server has an audit recorder and the given
// host policy; as(id) switches the identity of its in-process calls.
type enforced struct {
	*harness
	rec *recorder
}

func newEnforced(t testing.TB, opts *mcpserver.Options, allow, deny []string) *enforced {
	t.Helper()
	host, err := policy.NewHost(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	o := mcpserver.Options{Settings: mcpserver.Settings{MountPoint: testMount}}
	if opts != nil {
		o = *opts
	}
	rec := &recorder{}
	o.Policy, o.Audit = host, rec
	return &enforced{harness: newHarness(t, &o), rec: rec}
}

func (e *enforced) as(id identity.Identity) *enforced {
	e.ctx = identity.NewContext(context.Background(), id)
	return e
}

// rawCall calls a tool without checking the reply, for calls mcp-go
// refuses with a protocol error.
func (e *enforced) rawCall(tool string, args any) (*mcp.CallToolResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	return e.client.CallTool(e.ctx, req)
}

// visible lists the tools the current identity sees.
func (e *enforced) visible() []string {
	e.t.Helper()
	res, err := e.client.ListTools(e.ctx, mcp.ListToolsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestEnforcement is the table of permission decisions over real tool
// calls: each call is allowed or refused with a security error naming the
// rule, leaves exactly one audit record with the normalized paths, the
// decision and the reason, and a refused call changes nothing.
func TestEnforcement(t *testing.T) {
	const projectsA = "guide:/projects/a:rw"
	tests := []struct {
		name        string
		allow, deny []string
		id          identity.Identity
		tool        string
		args        m
		ok          bool
		rule        string   // substring of the security message and audit reason
		paths       []string // the audit record's paths
	}{
		{name: "inside the grant", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"path": "/projects/a/x.txt", "content": "x"}, ok: true, paths: []string{"/projects/a/x.txt"}},
		{name: "prefix boundary", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"path": "/projects/abc", "content": "x"},
			rule: "no grant allows write to /projects/abc via guide_cache_file; grants: guide:/projects/a:rw", paths: []string{"/projects/abc"}},
		{name: "prefix boundary after normalization", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"path": `projects\a\..\abc//x`, "content": "x"},
			rule: "no grant allows write to /projects/abc/x", paths: []string{"/projects/abc/x"}},
		{name: "parent of the grant", id: agent(t, "a", projectsA), tool: "guide_read_file",
			args: m{"path": "/projects", "content": "x"}, rule: "no grant allows write to /projects via guide_read_file"},
		{name: "read-only grant cannot write", id: agent(t, "r", "guide:/projects/a:r", "guide_cache_file:/elsewhere:w"), tool: "guide_cache_file",
			args: m{"path": "/projects/a/x", "content": "x"}, rule: "no grant allows write to /projects/a/x via guide_cache_file; grants: guide:/projects/a:r"},
		{name: "tool grant", id: agent(t, "t", "guide_read_file:/p:w"), tool: "guide_read_file",
			args: m{"path": "/p/x", "content": "x"}, ok: true},
		{name: "filename-only upload outside the grant", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"filename": "r.txt", "content": "x"}, rule: "no grant allows write to /uploads/" + sum([]byte("x"))[:16] + "/r.txt",
			paths: []string{"/uploads/" + sum([]byte("x"))[:16] + "/r.txt"}},
		{name: "filename-only upload with a grant on uploads", id: agent(t, "u", "guide:/uploads:w"), tool: "guide_cache_file",
			args: m{"filename": "../../r.txt", "content": "x"}, ok: true},
		{name: "chunk outside the grant", id: agent(t, "a", projectsA), tool: "guide_read_file",
			args: m{"path": "/projects/b/big", "upload_id": "u1", "chunk_index": 0, "chunk_count": 2, "content": "x", "sha256": strings.Repeat("a", 64)},
			rule: "no grant allows write to /projects/b/big"},
		{name: "listing inside the grant", id: agent(t, "a", projectsA), tool: "guide_list_directory",
			args: m{"path": "/projects/a", "entries": []any{m{"name": "d", "type": "directory", "entries": []any{m{"name": "f", "type": "file"}}}}},
			ok:   true, paths: []string{"/projects/a", "/projects/a/d", "/projects/a/d/f"}},
		{name: "listing of a parent", id: agent(t, "a", projectsA), tool: "guide_list_directory",
			args: m{"path": "/projects", "entries": []any{m{"name": "a/f", "type": "file"}}}, rule: "no grant allows write to /projects via guide_list_directory"},
		{name: "listing of the root without entries", id: agent(t, "a", projectsA), tool: "guide_list_directory",
			args: m{"path": "/", "entries": []any{}}, rule: "no grant allows write to / via"},
		{name: "listing entry in a denied prefix", id: agent(t, "a", projectsA), deny: []string{"/projects/a/secret"}, tool: "guide_list_directory",
			args:  m{"path": "/projects/a", "entries": []any{m{"name": "ok.txt", "type": "file"}, m{"name": "secret/key", "type": "file"}}},
			rule:  "the server's policy denies /projects/a/secret/key (denied prefix /projects/a/secret)",
			paths: []string{"/projects/a", "/projects/a/ok.txt", "/projects/a/secret/key"}},
		{name: "listing entry refused by the pattern is still checked", id: agent(t, "a", projectsA), deny: []string{"/projects/a/secret"}, tool: "guide_list_directory",
			args: m{"path": "/projects/a", "pattern": "*.go", "entries": []any{m{"name": "secret", "type": "file"}}}, rule: "denies /projects/a/secret"},
		{name: "full grants bounded by allow", id: tester, allow: []string{"/projects"}, tool: "guide_cache_file",
			args: m{"path": "/etc/passwd", "content": "x"}, rule: "the server's policy does not allow /etc/passwd (allowed prefixes: /projects)"},
		{name: "full grants bounded by deny", id: tester, deny: []string{"/projects/secret"}, tool: "guide_cache_file",
			args: m{"path": "/projects/secret/k", "content": "x"}, rule: "denied prefix /projects/secret"},
		{name: "certificate grant beyond allow", id: agent(t, "w", "*:/:rw"), allow: []string{"/projects"}, tool: "guide_cache_file",
			args: m{"path": "/uploads/x", "content": "x"}, rule: "does not allow /uploads/x"},
		{name: "denial wins over a validation problem", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"path": "/projects/abc", "content": "x", "mode": "9999"}, rule: "no grant allows write to /projects/abc"},
		{name: "validation problem inside the grant", id: agent(t, "a", projectsA), tool: "guide_cache_file",
			args: m{"path": "/projects/a/x", "content": "x", "mode": "9999"}, paths: []string{"/projects/a/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each case has its own server and store
			e := newEnforced(t, nil, tt.allow, tt.deny).as(tt.id)
			rev := e.revision()
			env := e.call(tt.tool, tt.args)
			recs := e.rec.records()
			if len(recs) != 1 {
				t.Fatalf("%d audit records for one call: %+v", len(recs), recs)
			}
			r := recs[0]
			if r.Tool != tt.tool || r.Identity != tt.id.String() || r.Event != audit.EventCall || r.RequestID != env.Stats["request_id"] || r.RequestID == "" {
				t.Errorf("record %+v; reply stats %v", r, env.Stats)
			}
			if tt.paths != nil && !slices.Equal(r.Paths, tt.paths) {
				t.Errorf("audit paths %q, want %q", r.Paths, tt.paths)
			}
			switch {
			case tt.ok:
				if !env.Success || r.Decision != audit.Allow || r.Error != "" {
					t.Fatalf("refused: %+v; record %+v", env.Error, r)
				}
				return
			case tt.rule == "":
				if env.Success || env.Error.Type != "validation" || r.Decision != audit.Allow || r.Error != "validation" {
					t.Fatalf("reply %+v; record %+v; want a validation failure after an allowing decision", env.Error, r)
				}
			default:
				if env.Success || env.Error.Type != "security" || !strings.Contains(env.Error.Message, tt.rule) {
					t.Fatalf("reply %+v; want a security error naming %q", env.Error, tt.rule)
				}
				if r.Decision != audit.Deny || r.Error != "security" || r.Reason != env.Error.Message {
					t.Errorf("record decision %q error %q reason %q", r.Decision, r.Error, r.Reason)
				}
				for _, leak := range []string{e.dir, "/tmp/"} {
					if strings.Contains(env.Error.Message+env.Error.Instruction, leak) {
						t.Errorf("the denial mentions the host path %s", leak)
					}
				}
			}
			if e.revision() != rev {
				t.Errorf("a refused call changed the store")
			}
		})
	}
}

// TestHiddenTools checks tools/list and tools/call for tools outside the
// caller's grants: hidden, refused by mcp-go as unknown, audited once with
// the rule.
func TestHiddenTools(t *testing.T) {
	e := newEnforced(t, nil, []string{"/projects"}, nil)
	guide := []string{"guide_begin_upload", "guide_cache_file", "guide_cache_files", "guide_cache_stats", "guide_changes", "guide_drop_uploads", "guide_file_history", "guide_list_directory", "guide_list_uploads", "guide_pending_requests", "guide_read_file", "guide_restore", "guide_snapshot"}
	provider := []string{"calculate_file_hash", "file_exists", "find_files", "get_file_stats", "list_directory", "read_file", "read_file_binary"}
	all := slices.Sorted(slices.Values(append(slices.Clone(guide), provider...)))
	tests := []struct {
		name string
		id   identity.Identity
		want []string
	}{
		{"group grant", agent(t, "g", "guide:/projects/a:rw"), guide},
		// A read-only caller sees only the tools it can use: none of the
		// guide tools that write.
		{"read-only group grant", agent(t, "ro", "guide:/projects/a:r"), []string{"guide_cache_stats", "guide_changes", "guide_file_history", "guide_list_uploads", "guide_pending_requests", "guide_snapshot"}},
		{"tool grant", agent(t, "t", "guide_read_file:/projects:rw"), []string{"guide_read_file"}},
		{"another group", agent(t, "p", "provider:/projects:rw"), provider},
		{"no grants", agent(t, "n"), nil},
		{"grant outside the allowed prefixes", agent(t, "o", "guide:/etc:rw"), nil},
		{"no identity", identity.Unknown, nil},
		{"full", tester, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.as(tt.id)
			if got := e.visible(); !slices.Equal(got, tt.want) {
				t.Errorf("tools/list shows %q, want %q", got, tt.want)
			}
			for _, tool := range all {
				if slices.Contains(tt.want, tool) {
					continue
				}
				before, rev := len(e.rec.records()), e.revision()
				res, err := e.rawCall(tool, m{"path": "/projects/a/x", "content": "x"})
				if err == nil {
					t.Fatalf("calling hidden %s succeeded: %+v", tool, res)
				}
				recs := e.rec.since(before)
				if len(recs) != 1 || recs[0].Decision != audit.Deny || recs[0].Tool != tool || recs[0].Identity != tt.id.String() ||
					!strings.Contains(recs[0].Reason, "no grant covers tool "+tool) && !strings.Contains(recs[0].Reason, "write through tool "+tool) {
					t.Errorf("audit after calling hidden %s: %+v", tool, recs)
				}
				if e.revision() != rev {
					t.Errorf("a refused call changed the store")
				}
			}
		})
	}
	t.Run("unknown tool", func(t *testing.T) {
		e.as(tester)
		before := len(e.rec.records())
		if _, err := e.rawCall("rm_rf", m{}); err == nil {
			t.Fatal("an unknown tool was called")
		}
		if recs := e.rec.since(before); len(recs) != 1 || recs[0].Tool != "rm_rf" || !strings.Contains(recs[0].Reason, `no such tool "rm_rf"`) {
			t.Errorf("audit of an unknown tool: %+v", recs)
		}
	})
}

// TestHiddenToolsOverHTTP runs the tool filter and the refusal hook over
// the real HTTP transport, with the identity the transport sets (the
// loopback identity narrowed by LocalGrants).
func TestHiddenToolsOverHTTP(t *testing.T) {
	rec := &recorder{}
	g, _ := grant.Parse("guide_read_file:/projects/a:w")
	h := newHarnessOver(t, &mcpserver.Options{Audit: rec, LocalGrants: []grant.Grant{g}, Settings: mcpserver.Settings{MountPoint: testMount}}, "http")
	res, err := h.client.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(res.Tools) != 1 || res.Tools[0].Name != "guide_read_file" {
		t.Fatalf("tools/list over HTTP: %v %+v", err, res)
	}
	h.ok("guide_read_file", m{"path": "/projects/a/x", "content": "x"}, nil)
	h.fail("guide_read_file", m{"path": "/projects/abc", "content": "x"}, "security")
	req := mcp.CallToolRequest{}
	req.Params.Name = "guide_cache_file"
	req.Params.Arguments = m{"path": "/projects/a/y", "content": "y"}
	if _, err := h.client.CallTool(context.Background(), req); err == nil {
		t.Fatal("a hidden tool was called over HTTP")
	}
	recs := rec.records()
	if len(recs) != 3 {
		t.Fatalf("%d audit records for 3 calls: %+v", len(recs), recs)
	}
	for i, want := range []audit.Decision{audit.Allow, audit.Deny, audit.Deny} {
		if recs[i].Decision != want || recs[i].Identity != "http:127.0.0.1" || recs[i].Transport != "http" || !strings.HasPrefix(recs[i].Remote, "127.0.0.1:") {
			t.Errorf("record %d: %+v", i, recs[i])
		}
	}
	if !strings.Contains(recs[2].Reason, "no grant covers tool guide_cache_file") {
		t.Errorf("hidden tool's record reason %q", recs[2].Reason)
	}
}

// TestAuditRecordContent checks what a record of a successful write holds:
// the content's size and hash but never the content, the credential's
// serial, the status and a duration.
func TestAuditRecordContent(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	id := agent(t, "a", "guide:/:rw")
	e.as(id)
	secret := "correct horse battery staple"
	env := e.ok("guide_cache_file", m{"path": "/s.txt", "content": secret}, nil)
	r := e.rec.records()[0]
	if r.Content == nil || r.Content.Size != int64(len(secret)) || r.Content.SHA256 != sum([]byte(secret)) {
		t.Errorf("content %+v", r.Content)
	}
	if r.Serial != id.Serial || r.Auth != "cert" || r.Remote != id.Remote || r.Status != "created" || r.Reason != "granted by guide:/:rw" || r.DurationMS < 0 {
		t.Errorf("record %+v", r)
	}
	if strings.Contains(fmt.Sprintf("%+v", r), secret) {
		t.Errorf("the record holds the content")
	}
	caller, _ := env.Stats["caller"].(map[string]any)
	if caller["calls"] != float64(1) || caller["bytes"] != float64(len(secret)) || caller["identity"] != id.String() {
		t.Errorf("stats.caller %v", env.Stats["caller"])
	}
}

// TestAuditFailureRefusesCalls: while the audit log fails, calls are
// refused before they change anything; a record that cannot be appended
// turns the reply into a system error, except for a call that committed a
// change: it succeeds with a warning and its record is written later.
func TestAuditFailureRefusesCalls(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(tester)
	e.ok("guide_cache_file", m{"path": "/before", "content": "x"}, nil)

	disk := errors.New("no space left on device")
	e.rec.fail(disk, disk)
	rev := e.revision()
	for _, call := range []struct {
		tool string
		args m
	}{
		{"guide_cache_file", m{"path": "/during", "content": "x"}},
		{"guide_list_directory", m{"path": "/d", "entries": []any{m{"name": "f", "type": "file"}}}},
		{"guide_read_file", m{"path": "/c", "upload_id": "u", "chunk_index": 0, "chunk_count": 2, "content": "x", "sha256": strings.Repeat("a", 64)}},
		{"guide_cache_file", m{"path": "/../escape", "content": "x"}},
	} {
		env := e.fail(call.tool, call.args, "system")
		if !strings.Contains(env.Error.Message, "audit log") || strings.Contains(env.Error.Message, "no space") {
			t.Errorf("%s: message %q", call.tool, env.Error.Message)
		}
	}
	if e.revision() != rev {
		t.Fatal("a call changed the store while the audit log was failing")
	}

	// A log that fails only at the append, after the write: the change is
	// stored, so the reply is a success (never an error an agent would
	// retry) with a warning that it is not audited yet.
	e.rec.fail(disk, nil)
	n := len(e.rec.records())
	env := e.ok("guide_cache_file", m{"path": "/unaudited", "content": "x"}, nil)
	if !slices.ContainsFunc(env.Warnings, func(w string) bool { return strings.Contains(w, "stored, but") && strings.Contains(w, "audit record") }) {
		t.Errorf("warnings %q do not say the change was stored but not audited", env.Warnings)
	}
	if got := len(e.rec.records()); got != n {
		t.Fatalf("%d records appended while the log failed", got-n)
	}
	// A read that succeeds while the log fails is still refused: its
	// data is not handed out unaudited.
	e.fail("guide_cache_stats", m{}, "system")

	// Once the log works, the next call writes the held record first.
	e.rec.fail(nil, nil)
	e.ok("guide_cache_file", m{"path": "/after", "content": "x"}, nil)
	var order []string
	for _, r := range e.rec.since(n) {
		order = append(order, r.Tool+" "+strings.Join(r.Paths, ","))
	}
	if want := []string{"guide_cache_file /unaudited", "guide_cache_file /after"}; !slices.Equal(order, want) {
		t.Errorf("records after the log recovered: %q, want %q", order, want)
	}
}

// TestRateLimit is Proof 4 at the server: with a frozen clock, a burst of
// N calls passes and call N+1 is refused with a retry-after hint, audited,
// and changes nothing; once the clock moves on, calls pass again. Bytes are
// limited the same way.
func TestRateLimit(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(d)
	}
	const n = 5
	e := newEnforced(t, &mcpserver.Options{
		Rate:     ratelimit.Limits{Calls: 0.5, CallBurst: n, Bytes: 100, ByteBurst: 1000},
		Settings: mcpserver.Settings{MountPoint: testMount, Now: clock, MaxContentBytes: 1000},
	}, nil, nil)
	e.as(agent(t, "busy", "guide:/:rw"))
	for i := range n {
		e.ok("guide_cache_file", m{"path": fmt.Sprintf("/r/%d", i), "content": "x"}, nil)
	}
	rev := e.revision()
	env := e.fail("guide_cache_file", m{"path": "/r/over", "content": "x"}, "rate_limited")
	if !strings.Contains(env.Error.Message, "0.5 calls per second") || !strings.Contains(env.Error.Instruction, "Wait 2 second(s)") {
		t.Errorf("rate limit error %+v", env.Error)
	}
	if e.revision() != rev {
		t.Fatal("a rate-limited call changed the store")
	}
	if r := e.rec.records()[n]; r.Decision != audit.Deny || r.Error != "rate_limited" || !strings.Contains(r.Reason, "rate limit") {
		t.Errorf("audit record of the refused call %+v", r)
	}
	e.as(agent(t, "other", "guide:/r:rw")) // another grant: another tenant, with buckets of its own
	e.ok("guide_cache_file", m{"path": "/r/other", "content": "x"}, nil)
	e.as(agent(t, "busy", "guide:/:rw"))
	advance(2 * time.Second)
	e.ok("guide_cache_file", m{"path": "/r/later", "content": "x"}, nil)

	// Bytes: 1000 at once, then 100 per second.
	advance(time.Hour)
	e.ok("guide_cache_file", m{"path": "/b/1", "content": strings.Repeat("a", 800)}, nil)
	rev = e.revision()
	env = e.fail("guide_cache_file", m{"path": "/b/2", "content": strings.Repeat("b", 500)}, "rate_limited")
	if !strings.Contains(env.Error.Message, "500 content bytes") || !strings.Contains(env.Error.Instruction, "Wait 3 second(s)") {
		t.Errorf("byte limit error %+v", env.Error)
	}
	if e.revision() != rev {
		t.Fatal("a call over the byte limit changed the store")
	}
	advance(3 * time.Second)
	e.ok("guide_cache_file", m{"path": "/b/2", "content": strings.Repeat("b", 500)}, nil)

	stats := e.srv.IdentityStats()
	var busy mcpserver.IdentityStats
	for _, s := range stats {
		if s.Identity == "http:depotfs://test/agent/busy" {
			busy = s
		}
	}
	if busy.Calls != n+5 || busy.RateLimited != 2 || busy.Denied != 0 || busy.Bytes != n+1+800+500 {
		t.Errorf("stats of the busy identity %+v (all: %+v)", busy, stats)
	}
}

// TestDenialBurstWarning: a burst of denials from one identity is logged as
// an unusual pattern, once.
func TestDenialBurstWarning(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(agent(t, "prober", "guide:/projects/a:rw"))
	for i := range 15 {
		e.fail("guide_cache_file", m{"path": fmt.Sprintf("/etc/%d", i), "content": "x"}, "security")
	}
	if n := strings.Count(e.logs.String(), "unusual pattern"); n != 1 {
		t.Errorf("%d unusual-pattern warnings for a burst of 15 denials, want 1:\n%s", n, e.logs)
	}
	var prober mcpserver.IdentityStats
	for _, s := range e.srv.IdentityStats() {
		if strings.HasSuffix(s.Identity, "/prober") {
			prober = s
		}
	}
	if prober.Calls != 15 || prober.Denied != 15 {
		t.Errorf("stats %+v", prober)
	}
}

// TestAuthFailureAudited checks the sink the authentication layer calls:
// one record per refused authentication, counted for the peer's address.
func TestAuthFailureAudited(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	when := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	e.srv.AuthFailure(context.Background(), auth.Failure{
		Time: when, Stage: auth.StageHandshake, Remote: "198.51.100.7:5555", Method: identity.MethodCert,
		Subject: "depotfs://test/agent/mallory", Serial: "ff", Resumed: true, Reason: "revoked", Err: auth.ErrRevoked,
	})
	recs := e.rec.records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	if r.Event != audit.EventAuth || r.Decision != audit.Deny || r.Stage != "handshake" || !r.Resumed || r.Serial != "ff" ||
		r.Identity != "http:depotfs://test/agent/mallory" || r.Remote != "198.51.100.7:5555" || !r.Time.Equal(when) ||
		!strings.HasPrefix(r.Reason, "revoked: ") {
		t.Errorf("record %+v", r)
	}
	for _, s := range e.srv.IdentityStats() {
		if s.Identity == "http:198.51.100.7" && s.AuthFailures == 1 {
			return
		}
	}
	t.Errorf("no auth failure counted for the address: %+v", e.srv.IdentityStats())
}

// TestResourcesObeyGrants reads, lists and subscribes to resources as an
// agent granted /projects/a: files outside its grants are absent from the
// listing and refused on read and subscribe, and every read leaves exactly
// one audit record with its decision.
func TestResourcesObeyGrants(t *testing.T) {
	e := newEnforced(t, nil, nil, nil)
	e.as(tester)
	e.put("/projects/a/x.txt", []byte("mine"))
	e.put("/projects/abc/y.txt", []byte("not mine"))
	e.as(agent(t, "r", "provider:/projects/a:r"))

	list, err := e.client.ListResourcesByPage(e.ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list.Resources {
		names = append(names, r.Name)
	}
	if !slices.Contains(names, "/projects/a/x.txt") || slices.Contains(names, "/projects/abc/y.txt") {
		t.Errorf("resources/list shows %q, want /projects/a/x.txt and not /projects/abc/y.txt", names)
	}

	tests := []struct {
		uri      string
		decision audit.Decision
	}{
		{mcpserver.ResourceURI("/projects/a/x.txt"), audit.Allow},
		{mcpserver.ResourceURI("/projects/abc/y.txt"), audit.Deny},
	}
	for _, tt := range tests {
		before := len(e.rec.records())
		req := mcp.ReadResourceRequest{}
		req.Params.URI = tt.uri
		_, err := e.client.ReadResource(e.ctx, req)
		if (err == nil) != (tt.decision == audit.Allow) {
			t.Errorf("read %s: %v, want decision %s", tt.uri, err, tt.decision)
		}
		recs := e.rec.since(before)
		if len(recs) != 1 || recs[0].Tool != "resources/read" || recs[0].Decision != tt.decision {
			t.Errorf("read %s left audit records %+v, want one %s", tt.uri, recs, tt.decision)
		}
	}

	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	filter := mcp.SubscriptionFilter{ResourceSubscriptions: []string{mcpserver.ResourceURI("/projects/abc/y.txt")}}
	if err := e.client.Listen(ctx, filter); err == nil || !strings.Contains(err.Error(), "no grant allows reading") {
		t.Errorf("subscribing outside the grants: %v, want a refusal naming the rule", err)
	}
}
