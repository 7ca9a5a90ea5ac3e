package integration_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUnknownToolNamesBounded: tool names are chosen by the client, so
// 1,000 calls of made-up names (5,000 in a soak) must not become as many
// label values of /metrics: they are counted under tool="unknown", and
// /metrics stays small (each name cost about 2.4 KB of it before).
func TestUnknownToolNamesBounded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	base := strings.TrimSuffix(d.url, "/mcp")
	names, workers := bySoak(1000, 5000), 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rc := newRawClient(t, d.url)
			for i := w; i < names; i += workers {
				if st, r := rc.call(i, fmt.Sprintf("made_up_tool_%05d_%s", i, strings.Repeat("x", 40)), `{}`); st != http.StatusOK || r.Error == nil && (r.Result == nil || !r.Result.IsError) {
					t.Errorf("call of an unknown tool: status %d %s; want an error", st, r.raw)
					return
				}
			}
		})
	}
	wg.Wait()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	t.Logf("/metrics after %d unknown tool names: %d bytes", names, len(body))
	if len(body) >= 1<<20 {
		t.Errorf("/metrics is %d bytes after %d unknown tool names; want under 1 MiB", len(body), names)
	}
	if strings.Contains(string(body), "made_up_tool_") {
		t.Error("/metrics carries a tool name the client made up")
	}
	_, fams := scrape(t, base+"/metrics", "")
	if v := value(t, fams, "depotfs_mcp_calls_total", "tool", "unknown"); v < float64(names) {
		t.Errorf(`depotfs_mcp_calls_total{tool="unknown"} = %v, want at least %d`, v, names)
	}
}

// writeSyscalls returns the write system calls pid has made so far
// (syscw of /proc/PID/io).
func writeSyscalls(t testing.TB, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no syscw in /proc/%d/io", pid)
	return 0
}

// TestHealthzCheap: /healthz needs no credentials, so 200 GETs must not
// cost 200 commits of the store (each a write and its fsyncs: 600 writes
// or more, against the 220 or so the limit allows). The write system
// calls of 200 GETs of a path that does nothing (the replies' own writes)
// are the baseline.
func TestHealthzCheap(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	base := strings.TrimSuffix(d.url, "/mcp")
	const gets = 200
	writesOf := func(path string, want int) (int64, time.Duration) {
		before := writeSyscalls(t, d.cmd.Process.Pid)
		start := time.Now()
		for i := range gets {
			if code, body := get(t, base+path); code != want {
				t.Fatalf("GET %s %d: %d %q", path, i, code, body)
			}
		}
		return writeSyscalls(t, d.cmd.Process.Pid) - before, time.Since(start)
	}
	baseline, _ := writesOf("/no-such-path", http.StatusNotFound)
	writes, took := writesOf("/healthz", http.StatusOK)
	t.Logf("%d GETs of /healthz in %v: %d write system calls (%d for as many GETs of a 404)", gets, took, writes, baseline)
	// Each GET's mount check is a statfs, which the FUSE server answers
	// with one write; beyond those, a commit (a few writes) a second.
	if extra, limit := writes-baseline, gets+10*(int64(took/time.Second)+1)+gets/20; extra > limit {
		t.Errorf("%d write system calls more than the baseline for %d GETs of /healthz in %v; want a commit at most once a second", extra, gets, took)
	}
}

// TestUnauthenticatedBodyCut: with --tokens, a POST without credentials
// that declares a 100,000-byte body and sends 11 bytes of it is answered
// 401 and its connection closed at once, not held open while the server
// waits for the rest.
func TestUnauthenticatedBodyCut(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tok, _ := issueToken(t, tokens, "agent", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})
	addr := hostOf(t, d.url)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"jsonrpc\":", addr)
	c.SetReadDeadline(time.Now().Add(45 * time.Second))
	reply, err := io.ReadAll(c)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open %v after 11 bytes of a 100,000-byte body without credentials", took)
	}
	if !strings.HasPrefix(string(reply), "HTTP/1.1 401") {
		t.Errorf("reply %.80q; want 401", reply)
	}
	if took > 5*time.Second {
		t.Errorf("the connection was closed after %v; want at once", took)
	}
}

var refusedCountRE = regexp.MustCompile(`msg="authentication refused".* count=(\d+)`)

// TestBadTokenFloodCheap: 1,000 requests with a made-up token (4,000 in a
// soak) cost a few audit records and log lines (one per burst from the
// address, with the count), not one of each per request; the counts still
// add up to every refusal.
func TestBadTokenFloodCheap(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tok, _ := issueToken(t, tokens, "agent", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tokens", tokens}, client: clientAuth{bearer: tok}})
	requests, workers := bySoak(1000, 4000), 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			hc := &http.Client{Transport: bearerTransport{"dfs1_0123456789abcdef_notarealtoken"}}
			for i := w; i < requests; i += workers {
				req, _ := http.NewRequest(http.MethodPost, d.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
				req.Header.Set("Content-Type", "application/json")
				res, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusUnauthorized {
					t.Errorf("a made-up token: status %d, want 401", res.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	d.stop()
	records := 0
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Event == "auth" && r.Stage == "request" {
			records++
		}
	}
	lines, counted := 0, 0
	for _, m := range refusedCountRE.FindAllStringSubmatch(d.logs.String(), -1) {
		lines++
		n, _ := strconv.Atoi(m[1])
		counted += n
	}
	if lines == 0 {
		lines = strings.Count(d.logs.String(), `msg="authentication refused"`)
	}
	t.Logf("%d requests with a made-up token: %d audit records, %d log lines counting %d refusals", requests, records, lines, counted)
	if records > 100 || lines > 100 {
		t.Errorf("%d audit records and %d log lines for %d refused requests; want at most 100 each", records, lines, requests)
	}
	if counted < requests {
		t.Errorf("the log lines count %d refusals of %d", counted, requests)
	}
}

// TestRefusedUploadsDenied: refused uploads are refusals on security
// grounds, audited as decision deny with a reason (and the path where one
// is known), so "depotfs audit query --decision deny" finds them: a PUT
// on another identity's upload URL, a guessed URL, archives with a member
// that escapes or is a link.
func TestRefusedUploadsDenied(t *testing.T) {
	t.Parallel()
	d, a, b := twoTenants(t)
	begin := func(args map[string]any) string {
		env := a.call(t, "guide_begin_upload", args)
		u, _ := env.Data["upload_url"].(string)
		if !env.Success || u == "" {
			t.Fatalf("guide_begin_upload %v: %+v", args, env.Error)
		}
		return u
	}
	secret := begin(map[string]any{"path": "/a/secret-plan.bin"})
	if r := put(t, secret, strings.NewReader("x"), 1, b.token); r.Status != http.StatusNotFound || strings.Contains(fmt.Sprint(r.Env), "tenant-a") {
		t.Errorf("B's PUT on A's URL: %d %+v; want 404 naming nobody", r.Status, r.Env.Error)
	}
	guess := secret[:strings.LastIndex(secret, "/")+1] + strings.Repeat("0", 64)
	if r := put(t, guess, strings.NewReader("x"), 1, b.token); r.Status != http.StatusNotFound {
		t.Errorf("a guessed URL: %d", r.Status)
	}
	for _, e := range []tarEntry{{name: "../escape.txt", typ: tar.TypeReg, data: []byte("x")}, {name: "link", typ: tar.TypeSymlink}} {
		u := begin(map[string]any{"path": "/a/unpacked", "format": "tar.gz"})
		arch := makeTarGz(t, []tarEntry{e})
		if r := put(t, u, bytes.NewReader(arch), int64(len(arch)), a.token); r.Env.Success {
			t.Errorf("an archive with member %q was unpacked", e.name)
		}
	}
	d.stop()
	code, out, errOut := runDepotfs(t, "audit", "query", "--audit-log", d.auditLog(), "--decision", "deny", "--tool", "guide_begin_upload")
	if code != 0 {
		t.Fatalf("audit query: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"issued to another identity", "never issued", "escape", "link"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit query --decision deny finds no refused upload with %q:\n%s", want, out)
		}
	}
	found := false
	for _, r := range auditRecords(t, d.auditLog()) {
		if r.Decision == "deny" && strings.Contains(r.Reason, "another identity") && slices.Contains(r.Paths, "/a/secret-plan.bin") {
			found = true
		}
	}
	if !found {
		t.Error("no deny record of B's PUT naming the path of A's upload")
	}
}
