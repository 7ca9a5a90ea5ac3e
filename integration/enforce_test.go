package integration_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/audit"
)

// auditLog is the daemon's audit log: audit.log beside its database.
func (d *daemon) auditLog() string { return filepath.Join(filepath.Dir(d.db), "audit.log") }

// auditRecords reads every record of the audit log at path.
func auditRecords(t testing.TB, path string) []audit.Record {
	t.Helper()
	var recs []audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatalf("read audit log: %v", err)
	}
	return recs
}

// listTools returns the names of the tools the daemon's client sees.
func (d *daemon) listTools() []string {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := d.client.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		d.t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// TestEnforcementOverHTTP is the enforcement part of Proof 2 through the
// real binary: an agent authenticated over HTTPS by a client certificate
// carrying its grants (and, the same, by a bearer token over HTTP) does not
// see a tool outside its grants and is refused when it calls it anyway; a
// prefix-boundary attempt, a write with a read-only grant, a filename-only
// upload outside the grants and a --deny prefix are refused with a security
// error naming the rule. Each attempt leaves exactly one audit line with the
// right reason and the agent's credential, and the mount unchanged.
func TestEnforcementOverHTTP(t *testing.T) {
	t.Parallel()
	grants := []string{"guide_cache_file:/projects/a:rw", "guide_read_file:/projects/a:r"}
	deny := []string{"--deny", "/projects/a/secret"}
	for _, how := range []string{"certificate", "token"} {
		t.Run(how, func(t *testing.T) {
			var d *daemon
			var check func(r audit.Record) bool // the record names the credential
			switch how {
			case "certificate":
				p := newPKI(t)
				agent := p.issue("builder", grants...)
				d = startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: agent, args: deny})
				serial := agent.serial(t)
				check = func(r audit.Record) bool {
					return r.Identity == "http:depotfs://example.org/agent/builder" && r.Auth == "cert" && r.Serial == serial
				}
			case "token":
				tokens := filepath.Join(t.TempDir(), "tokens.json")
				tok, id := issueToken(t, tokens, "builder", grants...)
				d = startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tok}, args: append([]string{"--tokens", tokens}, deny...)})
				check = func(r audit.Record) bool {
					return r.Identity == "http:depotfs://local/token/builder" && r.Auth == "token" && r.TokenID == id
				}
			}
			enforcementScenario(t, d, check)
		})
	}
}

// enforcementScenario runs the refused calls of TestEnforcementOverHTTP on
// d, whose client holds the grants guide_cache_file:/projects/a:rw and
// guide_read_file:/projects/a:r, with /projects/a/secret denied by the
// host; credential checks that an audit record names the client's
// credential.
func enforcementScenario(t *testing.T, d *daemon, credential func(audit.Record) bool) {
	t.Helper()
	d.mustCall("guide_cache_file", map[string]any{"path": "/projects/a/ok.txt", "content": "ok"})
	// guide_read_file only writes: a read-only grant on it does not show it.
	if got, want := d.listTools(), []string{"guide_cache_file"}; !slices.Equal(got, want) {
		t.Fatalf("tools/list shows %q, want %q", got, want)
	}

	tests := []struct {
		name   string
		tool   string
		args   map[string]any
		hidden bool   // refused by the MCP layer as an unknown tool
		rule   string // in the security error and the audit reason
	}{
		{"tool outside the grants", "guide_list_directory",
			map[string]any{"path": "/projects/a", "entries": []any{map[string]any{"name": "x", "type": "file"}}},
			true, "no grant covers tool guide_list_directory"},
		{"prefix boundary", "guide_cache_file", map[string]any{"path": "/projects/abc/x", "content": "x"},
			false, "no grant allows write to /projects/abc/x via guide_cache_file; grants: guide_cache_file:/projects/a:rw, guide_read_file:/projects/a:r"},
		{"prefix boundary after normalization", "guide_cache_file", map[string]any{"path": `projects\a\..\abc`, "content": "x"},
			false, "no grant allows write to /projects/abc via guide_cache_file"},
		{"read-only grant", "guide_read_file", map[string]any{"path": "/projects/a/new.txt", "content": "x"},
			true, "no grant allows write through tool guide_read_file"},
		{"filename-only upload outside the grants", "guide_cache_file", map[string]any{"filename": "report.txt", "content": "x"},
			false, "no grant allows write to /uploads/" + sha256hex([]byte("x"))[:16] + "/report.txt"},
		{"denied prefix inside the grant", "guide_cache_file", map[string]any{"path": "/projects/a/secret/key", "content": "x"},
			false, "the server's policy denies /projects/a/secret/key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, seen := snapshot(t, d.mount), len(auditRecords(t, d.auditLog()))
			env, err := d.tryCall(tt.tool, tt.args)
			switch {
			case tt.hidden:
				if err == nil || !strings.Contains(err.Error(), "not found") {
					t.Fatalf("calling a hidden tool: %v %+v; want it refused as unknown", err, env)
				}
			case err != nil:
				t.Fatal(err)
			case env.Success || env.Error.Type != "security" || !strings.Contains(env.Error.Message, tt.rule):
				t.Fatalf("reply %+v; want a security error naming %q", env.Error, tt.rule)
			}
			if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
				t.Errorf("a refused call changed the mount:\n%s", diff)
			}
			recs := auditRecords(t, d.auditLog())[seen:]
			if len(recs) != 1 {
				t.Fatalf("%d audit lines for one refused call: %+v", len(recs), recs)
			}
			r := recs[0]
			if r.Decision != audit.Deny || r.Tool != tt.tool || !strings.Contains(r.Reason, tt.rule) || r.Transport != "http" ||
				!strings.HasPrefix(r.Remote, "127.0.0.1:") || !credential(r) {
				t.Errorf("audit line %+v; want a denial of %s naming %q", r, tt.tool, tt.rule)
			}
			if !tt.hidden && (r.Error != "security" || r.RequestID == "" || len(r.Paths) == 0 || strings.Contains(r.Paths[0], `\`)) {
				t.Errorf("audit line %+v lacks the error type, request id or normalized paths", r)
			}
		})
	}

	seen := len(auditRecords(t, d.auditLog()))
	env := d.mustCall("guide_cache_file", map[string]any{"path": "/projects/a/later.txt", "content": "later"})
	recs := auditRecords(t, d.auditLog())[seen:]
	if len(recs) != 1 || recs[0].Decision != audit.Allow || recs[0].RequestID != env.Stats["request_id"] || !credential(recs[0]) ||
		recs[0].Content == nil || recs[0].Content.SHA256 != sha256hex([]byte("later")) || recs[0].Status != "created" {
		t.Errorf("audit of an allowed call: %+v (reply stats %v)", recs, env.Stats)
	}
}
