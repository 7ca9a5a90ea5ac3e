package integration_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// statusCommand runs "depotfs status" with extra environment variables
// and returns its exit code and output.
func statusCommand(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(depotfsBin, append([]string{"status", "--timeout", "20s"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("depotfs status: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestStatusWithToken: status reaches a server that requires bearer
// tokens with DEPOTFS_TOKEN or --token-file, and says what is missing
// without one.
func TestStatusWithToken(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok, id := issueToken(t, tokens, "ops", "guide:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/one.txt", "content": "1"})

	code, out := statusCommand(t, nil, "--url", d.url)
	if code != 1 || !strings.Contains(out, "requires authentication") || !strings.Contains(out, "DEPOTFS_TOKEN") {
		t.Errorf("status without a token: exit %d\n%s", code, out)
	}
	code, out = statusCommand(t, []string{"DEPOTFS_TOKEN=" + tok}, "--url", d.url)
	if code != 0 || !strings.Contains(out, "files") || !strings.Contains(out, d.url) {
		t.Errorf("status with DEPOTFS_TOKEN: exit %d\n%s", code, out)
	}
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out = statusCommand(t, nil, "--url", d.url, "--token-file", file, "--json")
	if code != 0 || !strings.Contains(out, `"files": 1`) {
		t.Errorf("status with --token-file: exit %d\n%s", code, out)
	}
	depotfsCommand(t, "token", "revoke", "--tokens", tokens, id)
	code, out = statusCommand(t, nil, "--url", d.url, "--token-file", file)
	if code != 1 || !strings.Contains(out, "refused the bearer token") {
		t.Errorf("status with a revoked token: exit %d\n%s", code, out)
	}
}

// TestStatusWithMTLS: status reaches a server that requires client
// certificates with --ca, --cert and --key, and says what is wrong
// without them.
func TestStatusWithMTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	agent := p.issue("ops", "guide:/:r")
	d := startDaemon(t, daemonConfig{transport: overHTTP, pki: p, client: agent})

	code, out := statusCommand(t, nil, "--url", d.url, "--ca", p.caFile(), "--cert", agent.certFile, "--key", agent.keyFile)
	if code != 0 || !strings.Contains(out, "files") {
		t.Errorf("status with a client certificate: exit %d\n%s", code, out)
	}
	code, out = statusCommand(t, nil, "--url", d.url, "--ca", p.caFile())
	if code != 1 || !strings.Contains(out, "client certificate") {
		t.Errorf("status without a client certificate: exit %d\n%s", code, out)
	}
	code, out = statusCommand(t, nil, "--url", d.url, "--cert", agent.certFile, "--key", agent.keyFile)
	if code != 1 || !strings.Contains(out, "--ca") {
		t.Errorf("status without --ca: exit %d\n%s", code, out)
	}
	code, out = statusCommand(t, nil, "--url", d.url, "--cert", agent.certFile)
	if code != 2 || !strings.Contains(out, "--cert and --key go together") {
		t.Errorf("--cert without --key: exit %d\n%s", code, out)
	}
}
