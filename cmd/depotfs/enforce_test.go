package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/ratelimit"
)

// TestEnforceFlags parses the policy, audit and rate flags as serve does.
func TestEnforceFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, c *enforceConfig)
	}{
		{"defaults", nil, "", func(t *testing.T, c *enforceConfig) {
			if got := c.host.Allow(); len(got) != 1 || got[0] != "/" || len(c.host.Deny()) != 0 {
				t.Errorf("allow %q deny %q", got, c.host.Deny())
			}
			if c.auditLog != "/srv/depot/audit.log" {
				t.Errorf("audit log %q, want it beside the database", c.auditLog)
			}
			// Hard limits are opt-in: a bulk push must pass on the defaults.
			if r := c.rate(); r.Calls != 0 || r.CallBurst != 100 || r.Bytes != 0 || r.ByteBurst != 128<<20 {
				t.Errorf("rate %+v, want unlimited calls and bytes", r)
			}
		}},
		{"prefixes", []string{"--allow", "/projects", "--allow", "uploads-not-absolute"}, "--allow", nil},
		{"allow and deny", []string{"--allow", "/projects//a/", "--allow", "/uploads", "--deny", "/projects/a/secret"}, "", func(t *testing.T, c *enforceConfig) {
			if got := strings.Join(c.host.Allow(), " "); got != "/projects/a /uploads" {
				t.Errorf("allow %q", got)
			}
			if got := strings.Join(c.host.Deny(), " "); got != "/projects/a/secret" {
				t.Errorf("deny %q", got)
			}
		}},
		{"limited", []string{"--rate-calls", "50", "--rate-bytes", "64MiB"}, "", func(t *testing.T, c *enforceConfig) {
			if r := c.rate(); r.Calls != 50 || r.Bytes != 64<<20 {
				t.Errorf("rate %+v, want 50 calls and 64MiB per second", r)
			}
		}},
		{"unlimited", []string{"--rate-calls", "0", "--rate-bytes", "0"}, "", func(t *testing.T, c *enforceConfig) {
			if r := c.rate(); r.Calls != 0 || r.Bytes != 0 {
				t.Errorf("0 on the command line gave %+v, want zero (unlimited) rates", r)
			}
			l := ratelimit.New(c.rate())
			for range 10000 {
				if ok, _ := l.Call("x", testTime); !ok {
					t.Fatal("an unlimited rate refused a call")
				}
			}
		}},
		{"audit flags", []string{"--audit-log", "/var/log/depotfs/audit.log", "--audit-max-size", "8MiB"}, "", func(t *testing.T, c *enforceConfig) {
			if c.auditLog != "/var/log/depotfs/audit.log" || c.auditMaxSize != 8<<20 {
				t.Errorf("audit %q %d", c.auditLog, c.auditMaxSize)
			}
		}},
		{"tiny rotation", []string{"--audit-max-size", "100"}, "--audit-max-size", nil},
		{"negative rate", []string{"--rate-calls", "-1"}, "--rate-calls", nil},
		{"zero burst", []string{"--rate-call-burst", "0"}, "burst", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c enforceConfig
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			c.flags(fs)
			if err := parseFlags(fs, tt.args, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			err := c.resolve("/srv/depot/depot.db")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("resolve = %v, want an error mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, &c)
		})
	}
}

// TestServeRefusesBadPolicy runs serve with a bad --allow: a usage error
// before anything is opened.
func TestServeRefusesBadPolicy(t *testing.T) {
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--db", dir + "/depot.db", "--mount", dir + "/mnt", "--deny", "relative"}, &bytes.Buffer{}, &stderr)
	if code != 2 || !strings.Contains(stderr.String(), "--deny") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
}
