package integration_test

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

var nfsAddrRE = regexp.MustCompile(`serving NFSv3 read-only" address=127\.0\.0\.1:(\d+)`)

// nfsURL is a libnfs URL of depot path p on the NFS port of the daemon's log.
func nfsURL(d *daemon, p string) string {
	m := nfsAddrRE.FindStringSubmatch(d.waitLogLine("the NFS server to start", "serving NFSv3 read-only"))
	if m == nil {
		d.t.Fatalf("no NFS address in the log")
	}
	return "nfs://127.0.0.1" + p + "?version=3&nfsport=" + m[1] + "&mountport=" + m[1]
}

// TestServeNFS runs depotfs serve --nfs with an export prefix and reads
// what agents pushed with libnfs's nfs-ls and nfs-cat, after a restart
// too: the prefix's files byte for byte, nothing outside it, every mount
// of the export audited.
func TestServeNFS(t *testing.T) {
	nfsLs, nfsCat := needProgram(t, "nfs-ls"), needProgram(t, "nfs-cat") // Debian: libnfs-utils
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--nfs", "127.0.0.1:0", "--nfs-prefix", "/proj"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/src/a.txt", "content": "alpha\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/secret/s.txt", "content": "no\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for range 2 {
		out, err := exec.CommandContext(ctx, nfsCat, nfsURL(d, "/proj/src/a.txt")).Output()
		if err != nil || string(out) != "alpha\n" {
			t.Fatalf("nfs-cat /proj/src/a.txt: %q, %v", out, err)
		}
		out, err = exec.CommandContext(ctx, nfsLs, "-R", nfsURL(d, "/proj")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "src/a.txt") || strings.Contains(string(out), "secret") {
			t.Fatalf("nfs-ls -R /proj: %v\n%s", err, out)
		}
		out, err = exec.CommandContext(ctx, nfsCat, nfsURL(d, "/secret/s.txt")).CombinedOutput()
		if err == nil || strings.Contains(string(out), "no\n") {
			t.Fatalf("nfs-cat /secret/s.txt outside the prefix: %q, %v", out, err)
		}
		d = d.restart()
	}
	log, err := os.ReadFile(d.auditLog())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), `"tool":"nfs/mount","paths":["/proj"]`) || !strings.Contains(string(log), `"tool":"nfs/mount","decision":"deny"`) {
		t.Errorf("the audit log has no allowed and refused NFS mounts:\n%s", log)
	}
}

// TestServeNFSGrants serves the whole depot with --nfs-grants naming /a
// only: libnfs's client lists and reads /a, and no name of /b shows by
// any path (the root's listing, a mount of /b, a walk of it, a path that
// climbs or hides a slash); /b's file reads as missing.
func TestServeNFSGrants(t *testing.T) {
	nfsLs, nfsCat := needProgram(t, "nfs-ls"), needProgram(t, "nfs-cat") // Debian: libnfs-utils
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--nfs", "127.0.0.1:0", "--nfs-grants", "nfs:/a:r"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/x.txt", "content": "for a\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/b/secret-b.txt", "content": "secret of b\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/b/hidden-dir/z.txt", "content": "z\n"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	out, err := exec.CommandContext(ctx, nfsLs, "-R", nfsURL(d, "/")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "a/x.txt") {
		t.Fatalf("nfs-ls -R /: %v\n%s", err, out)
	}
	if out, err := exec.CommandContext(ctx, nfsCat, nfsURL(d, "/a/x.txt")).Output(); err != nil || string(out) != "for a\n" {
		t.Fatalf("nfs-cat /a/x.txt: %q, %v", out, err)
	}
	shown := string(out)
	// libnfs's error messages repeat the URL asked for; what must not
	// show is what only the depot knows.
	for _, p := range []string{"/b", "/b/", "/b/hidden-dir", "/a/../b", "/a/%2e%2e/b", "/a/..%2fb", "/./b"} {
		u := nfsURL(d, p)
		o, _ := exec.CommandContext(ctx, nfsLs, "-R", u).CombinedOutput()
		shown += strings.ReplaceAll(string(o), u, "URL")
	}
	for _, p := range []string{"/b/secret-b.txt", "/a/../b/secret-b.txt", "/a/%2e%2e/b/secret-b.txt", "/b/hidden-dir/z.txt"} {
		u := nfsURL(d, p)
		o, err := exec.CommandContext(ctx, nfsCat, u).CombinedOutput()
		if err == nil {
			t.Errorf("nfs-cat %s under a grant of /a: %q", p, o)
		}
		shown += strings.ReplaceAll(string(o), u, "URL")
	}
	for _, name := range []string{"secret", "hidden", "z.txt", "of b"} {
		if strings.Contains(shown, name) {
			t.Errorf("an NFS client granted /a only was shown %q:\n%s", name, shown)
		}
	}
}
