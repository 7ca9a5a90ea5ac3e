package integration_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestSIGHUPReloadsTokens: SIGHUP re-reads the tokens file and keeps
// serving: the revoked token is refused, another token still works, the
// mount still answers.
func TestSIGHUPReloadsTokens(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tokA, idA := issueToken(t, tokens, "a", "*:/:rw")
	tokB, _ := issueToken(t, tokens, "b", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tokA}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/before.txt", "content": "before"})

	depotfsCommand(t, "token", "revoke", "--tokens", tokens, idA)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.waitLogLine("the reload", `msg="SIGHUP: reloaded; still serving"`, "tokens=reloaded")

	if _, err := d.tryCall("guide_cache_file", map[string]any{"path": "/after-a.txt", "content": "x"}); err == nil {
		t.Error("the revoked token was accepted after SIGHUP")
	}
	b := d.connect(clientAuth{bearer: tokB})
	if env, err := callWith(b.mcp, "guide_cache_file", map[string]any{"path": "/after-b.txt", "content": "b"}); err != nil || !env.Success {
		t.Fatalf("a valid token after SIGHUP: %+v, %v\n%s", env, err, tail(d.logs.String(), 20))
	}
	for p, want := range map[string]string{"/before.txt": "before", "/after-b.txt": "b"} {
		if got, err := os.ReadFile(d.path(p)); err != nil || string(got) != want {
			t.Errorf("%s through the mount after SIGHUP: %q, %v", p, got, err)
		}
	}
	select {
	case <-d.exited:
		t.Fatal("depotfs exited on SIGHUP")
	default:
	}
}

// TestSIGHUPReloadsGrants: the local grants come from --env-file, and
// SIGHUP applies a change to them without a restart.
func TestSIGHUPReloadsGrants(t *testing.T) {
	t.Parallel()
	env := filepath.Join(t.TempDir(), "depotfs.env")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(env, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("# local callers may write /a only\nDEPOTFS_GRANTS=guide:/a:rw\nOTHER_PROGRAM=ignored\n")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--env-file", env}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/1.txt", "content": "1"})
	if e := d.call("guide_cache_file", map[string]any{"path": "/b/1.txt", "content": "1"}); e.Success || e.Error.Type != "security" {
		t.Fatalf("write to /b with grants on /a: %+v", e)
	}

	write("DEPOTFS_GRANTS='guide:/b:rw'\n")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.waitLogLine("the reload", `msg="SIGHUP: reloaded; still serving"`, "grants=guide:/b:rw")
	d.mustCall("guide_cache_file", map[string]any{"path": "/b/2.txt", "content": "2"})
	if e := d.call("guide_cache_file", map[string]any{"path": "/a/2.txt", "content": "2"}); e.Success || e.Error.Type != "security" {
		t.Errorf("write to /a after the grants moved to /b: %+v", e)
	}

	write("DEPOTFS_GRANTS=guide:/b:rw\nDEPOTFS_MAX_FILE_SIZE=1MiB\n")
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.waitLogLine("the restart warning", "takes effect only on restart", "setting=DEPOTFS_MAX_FILE_SIZE")
}
