package integration_test

import (
	"testing"
)

// TestLocalGrants: the unauthenticated local callers (stdio, loopback HTTP
// without TLS or tokens) have full grants unless --grants narrows them.
func TestLocalGrants(t *testing.T) {
	t.Parallel()
	for _, tr := range []transportKind{overStdio, overHTTP} {
		t.Run(string(tr), func(t *testing.T) {
			d := startDaemon(t, daemonConfig{transport: tr, args: []string{"--grants", "guide:/local:rw,*:/shared:r"}})
			d.mustCall("guide_cache_file", map[string]any{"path": "/local/ok.txt", "content": "ok"})
			before := snapshot(t, d.mount)
			for _, p := range []string{"/elsewhere/no.txt", "/shared/no.txt", "/localx/no.txt"} {
				env := d.call("guide_cache_file", map[string]any{"path": p, "content": "no"})
				if env.Success || env.Error == nil || env.Error.Type != "security" {
					t.Errorf("write to %s with --grants: %+v, want a security error", p, env)
				}
			}
			if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
				t.Errorf("refused calls changed the depot:\n%s", diff)
			}
		})
	}
}
