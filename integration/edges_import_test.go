package integration_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/audit"
)

// TestImportObeysPolicy: an export holding /other/deep/x.txt is refused
// whole, with an error naming that path and the rule, by a direct import
// given --deny /other (as a flag, or in serve's env file beside settings
// import does not have) or --allow /proj, and by a running server started
// with --deny /other when it comes through --url; each leaves the depot
// unchanged (nothing of /proj either), and the server's audit record is a
// deny naming the path. Without a rule that refuses it, the same export
// imports.
func TestImportObeysPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := filepath.Join(dir, "e1.tar")
	seedExport(t, e1)
	envFile := filepath.Join(dir, "depotfs.env")
	if err := os.WriteFile(envFile, []byte("DEPOTFS_LOG_LEVEL=debug\nDEPOTFS_DENY=/other\nDEPOTFS_RATE_CALLS=10\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.json")
	op, _ := issueToken(t, tokens, "op", "backup:/:w", "guide:/:rw")
	s := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens, "--deny", "/other"}, client: clientAuth{bearer: op}})
	code, _, stderr := runDepotfsIn(t, "", []string{"DEPOTFS_TOKEN=" + op}, "import", e1, "--url", s.url)
	if code == 0 || !strings.Contains(stderr, "403") || !strings.Contains(stderr, "/other/deep/x.txt") || !strings.Contains(stderr, "denied prefix /other") {
		t.Errorf("import --url into a server with --deny /other: exit %d\n%s", code, stderr)
	}
	for _, p := range []string{"/proj", "/other", "/listed"} {
		if _, err := os.Stat(s.path(p)); !os.IsNotExist(err) {
			t.Errorf("after the refused import, %s: %v; want the depot unchanged", p, err)
		}
	}
	if msg := runFailing(t, depotfsBin, "import", e1, "--url", s.url, "--deny", "/x"); !strings.Contains(msg, "not both") {
		t.Errorf("--url with --deny: %s", msg)
	}
	s.stop()
	if !slices.ContainsFunc(auditRecords(t, s.auditLog()), func(r audit.Record) bool {
		return r.Tool == "import" && r.Decision == audit.Deny && slices.Contains(r.Paths, "/other/deep/x.txt")
	}) {
		t.Error("no deny record of the refused import naming /other/deep/x.txt")
	}
	db := filepath.Join(dir, "direct.db")
	emptyManifest := func(after string) {
		t.Helper()
		e := filepath.Join(t.TempDir(), "after.tar")
		runProgram(t, depotfsBin, "export", "--db", db, "--to", e)
		if m, files := exportContents(t, e); m != "" || len(files) != 0 {
			t.Errorf("after %s the depot holds:\n%s; want it unchanged (empty)", after, m)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		rule string
	}{
		{"--deny", []string{"--deny", "/other"}, "denied prefix /other"},
		{"--env-file", []string{"--env-file", envFile}, "denied prefix /other"},
		{"--allow", []string{"--allow", "/proj"}, "allowed prefixes: /proj"},
	} {
		code, _, stderr := runDepotfs(t, append([]string{"import", e1, "--db", db}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, "/other/deep/x.txt") || !strings.Contains(stderr, c.rule) || !strings.Contains(stderr, "nothing was imported") {
			t.Errorf("import %s: exit %d\n%s; want it refused naming /other/deep/x.txt and %q", c.name, code, stderr, c.rule)
		}
		emptyManifest("import " + c.name)
	}
	if out := runProgram(t, depotfsBin, "import", e1, "--db", db, "--deny", "/elsewhere", "--json"); !strings.Contains(out, `"files":4`) {
		t.Errorf("import with a rule that refuses nothing: %s; want the 4 files", out)
	}

}
