package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

var testTime = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// writeTestLog writes a small audit log: allowed and denied calls of two
// identities and one refused authentication.
func writeTestLog(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i, r := range []audit.Record{
		{Event: audit.EventCall, Identity: "http:depotfs://x/agent/a", Tool: "guide_cache_file", Paths: []string{"/projects/a/1"}, Decision: audit.Allow},
		{Event: audit.EventCall, Identity: "http:depotfs://x/agent/a", Tool: "guide_cache_file", Paths: []string{"/projects/abc"}, Decision: audit.Deny, Error: "security", Reason: "no grant allows write to /projects/abc"},
		{Event: audit.EventCall, Identity: "stdio:root", Tool: "guide_list_directory", Paths: []string{"/projects/a", "/projects/a/2"}, Decision: audit.Allow},
		{Event: audit.EventAuth, Identity: "http:depotfs://x/agent/m", Stage: "handshake", Decision: audit.Deny, Reason: "revoked"},
	} {
		r.Time = testTime.Add(time.Duration(i) * time.Hour)
		if err := l.Append(&r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestAuditVerifyCommand(t *testing.T) {
	path := writeTestLog(t)
	code, out, errOut := runCmd(t, "audit", "verify", "--audit-log", path)
	if code != 0 || !strings.Contains(out, "ok: ") || !strings.Contains(out, "4 record(s)") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(b, []byte("\n"))
	os.WriteFile(path, bytes.Join(append(lines[:1:1], lines[2:]...), nil), 0o600)
	code, out, errOut = runCmd(t, "audit", "verify", "--audit-log", path)
	if code != 1 || !strings.Contains(out, "TAMPERED: record 3 ") || !strings.Contains(out, "record 2 is missing") {
		t.Fatalf("after deleting record 2: exit %d\n%s%s", code, out, errOut)
	}
}

func TestAuditQueryCommand(t *testing.T) {
	path := writeTestLog(t)
	tests := []struct {
		name string
		args []string
		seqs []uint64
	}{
		{"all", nil, []uint64{1, 2, 3, 4}},
		{"identity subject", []string{"--identity", "depotfs://x/agent/a"}, []uint64{1, 2}},
		{"identity", []string{"--identity", "stdio:root"}, []uint64{3}},
		{"tool", []string{"--tool", "guide_list_directory"}, []uint64{3}},
		{"path prefix", []string{"--path", "/projects/a"}, []uint64{1, 3}},
		{"decision", []string{"--decision", "deny"}, []uint64{2, 4}},
		{"event", []string{"--event", "auth"}, []uint64{4}},
		{"since", []string{"--since", testTime.Add(time.Hour).Format(time.RFC3339)}, []uint64{2, 3, 4}},
		{"until", []string{"--until", testTime.Add(2 * time.Hour).Format(time.RFC3339)}, []uint64{1, 2}},
		{"combined", []string{"--identity", "depotfs://x/agent/a", "--decision", "allow", "--path", "/projects"}, []uint64{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCmd(t, append([]string{"audit", "query", "--audit-log", path, "--json"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var got []uint64
			dec := json.NewDecoder(strings.NewReader(out))
			for dec.More() {
				var r audit.Record
				if err := dec.Decode(&r); err != nil {
					t.Fatal(err)
				}
				got = append(got, r.Seq)
			}
			if !slices.Equal(got, tt.seqs) {
				t.Fatalf("records %v, want %v", got, tt.seqs)
			}
		})
	}
	code, out, _ := runCmd(t, "audit", "query", "--audit-log", path, "--decision", "deny")
	if code != 0 || !strings.Contains(out, "TIME") || !strings.Contains(out, "no grant allows write to /projects/abc") || !strings.Contains(out, "(auth handshake)") {
		t.Errorf("table:\n%s", out)
	}
	for _, bad := range [][]string{{"--decision", "maybe"}, {"--since", "yesterday"}, {"--path", "projects"}} {
		if code, _, _ := runCmd(t, append([]string{"audit", "query", "--audit-log", path}, bad...)...); code != 2 {
			t.Errorf("query %q: exit %d, want 2", bad, code)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := testTime
	for _, tt := range []struct {
		in   string
		want time.Time
	}{
		{"", time.Time{}},
		{"2026-04-01T00:00:00Z", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)},
		{"90m", now.Add(-90 * time.Minute)},
	} {
		got, err := parseWhen(tt.in, now)
		if err != nil || !got.Equal(tt.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if _, err := parseWhen("-1h", now); err == nil {
		t.Error("a negative duration was accepted")
	}
}
