package integration_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// davTree is what the WebDAV tests push: /a for the reader, /b for
// another tenant, whose names the reader must never see.
var davTree = map[string]string{
	"/a/x.txt":              "hello from a\n",
	"/a/sub/deep.txt":       "deep\n",
	"/a/name with space.md": "# spaced\n",
	"/a/ünï.txt":            "unicode name\n",
	"/b/secret-b.txt":       "secret of b\n",
	"/b/hidden-dir/z.txt":   "z\n",
}

// davDaemon starts a daemon with tokens: the operator (its own client,
// which pushes davTree and a binary file /a/blob.bin), a reader granted
// /a and a reader granted /b. It returns the daemon, the two readers'
// tokens and the binary file's bytes.
func davDaemon(t *testing.T) (d *daemon, tokA, tokB string, blob []byte) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	op, _ := issueToken(t, tokens, "operator", "*:/:rw")
	tokA, _ = issueToken(t, tokens, "reader-a", "*:/a:r")
	tokB, _ = issueToken(t, tokens, "reader-b", "guide:/b:r")
	d = startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: op}, args: []string{"--tokens", tokens}})
	files := []any{}
	for p, c := range davTree {
		files = append(files, map[string]any{"path": p, "content": c})
	}
	d.mustCall("guide_cache_files", map[string]any{"files": files})
	blob = pseudoRandom(300<<10, 29)
	d.mustCall("guide_cache_file", map[string]any{"path": "/a/blob.bin", "content": base64.StdEncoding.EncodeToString(blob), "encoding": "base64"})
	return d, tokA, tokB, blob
}

// base returns the listener's URL without /mcp.
func (d *daemon) base() string { return strings.TrimSuffix(d.url, "/mcp") }

// curlResult is one curl run: status code, headers and body.
type curlResult struct {
	status  int
	headers string
	body    []byte
}

// curl runs curl with args against the daemon (bearer token tok unless
// empty) and returns what it received. --path-as-is keeps "..", so the
// server, not curl, decides about traversal.
func curl(t testing.TB, tok string, args ...string) curlResult {
	t.Helper()
	dir := t.TempDir()
	hdr, body := filepath.Join(dir, "h"), filepath.Join(dir, "b")
	all := []string{"-sS", "--path-as-is", "-D", hdr, "-o", body, "-w", "%{http_code}"}
	if tok != "" {
		all = append(all, "-H", "Authorization: Bearer "+tok)
	}
	out, err := exec.Command("curl", append(all, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %s: %v", strings.Join(args, " "), err)
	}
	var r curlResult
	fmt.Sscanf(string(out), "%d", &r.status)
	h, _ := os.ReadFile(hdr)
	r.headers = strings.ToLower(string(h))
	r.body, _ = os.ReadFile(body)
	return r
}

// TestWebDAVCurl reads the depot over WebDAV with curl: PROPFIND at depth
// 0 and 1 (infinity refused), ranged GETs with the sha256 ETag, a
// browser's directory listing, snapshots, and every write method refused
// with nothing changed; a token for /a sees no name of /b, by any URL.
func TestWebDAVCurl(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	d, tokA, tokB, blob := davDaemon(t)
	dav := d.base() + "/dav"

	t.Run("propfind", func(t *testing.T) {
		r := curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/")
		if r.status != 207 {
			t.Fatalf("PROPFIND / = %d %s", r.status, r.body)
		}
		for _, want := range []string{"<D:href>/dav/</D:href>", "<D:href>/dav/a/</D:href>"} {
			if !bytes.Contains(r.body, []byte(want)) {
				t.Errorf("PROPFIND / lacks %s:\n%s", want, r.body)
			}
		}
		if bytes.Contains(r.body, []byte("/b")) {
			t.Errorf("reader-a's PROPFIND / names /b:\n%s", r.body)
		}
		r = curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/a/")
		for _, want := range []string{"/dav/a/x.txt", "/dav/a/sub/", "/dav/a/name%20with%20space.md", "/dav/a/%C3%BCn%C3%AF.txt",
			"<D:getcontentlength>307200</D:getcontentlength>", `<D:getetag>&#34;` + sha256hex(blob) + `&#34;</D:getetag>`} {
			if !bytes.Contains(r.body, []byte(want)) {
				t.Errorf("PROPFIND /a/ lacks %s:\n%s", want, r.body)
			}
		}
		r = curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 0", dav+"/a/x.txt")
		if r.status != 207 || bytes.Count(r.body, []byte("<D:response>")) != 1 || !bytes.Contains(r.body, []byte("<D:getcontentlength>13<")) {
			t.Errorf("PROPFIND depth 0 of a file = %d:\n%s", r.status, r.body)
		}
		for _, depth := range []string{"infinity", ""} {
			args := []string{"-X", "PROPFIND", dav + "/"}
			if depth != "" {
				args = append(args, "-H", "Depth: "+depth)
			}
			r = curl(t, tokA, args...)
			if r.status != 403 || !bytes.Contains(r.body, []byte("propfind-finite-depth")) {
				t.Errorf("PROPFIND depth %q = %d %s, want 403 propfind-finite-depth", depth, r.status, r.body)
			}
		}
		body := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><x:nope xmlns:x="urn:x"/></D:prop></D:propfind>`
		r = curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 0", "--data-binary", body, dav+"/a/blob.bin")
		if !bytes.Contains(r.body, []byte(sha256hex(blob))) || !bytes.Contains(r.body, []byte("404 Not Found")) || bytes.Contains(r.body, []byte("getcontentlength")) {
			t.Errorf("PROPFIND of named properties:\n%s", r.body)
		}
	})

	t.Run("get", func(t *testing.T) {
		r := curl(t, tokA, "-r", "1000-1999", dav+"/a/blob.bin")
		if r.status != 206 || !bytes.Equal(r.body, blob[1000:2000]) {
			t.Errorf("ranged GET = %d, %d bytes; want 206 and bytes 1000-1999", r.status, len(r.body))
		}
		etag := `etag: "` + sha256hex(blob) + `"`
		if !strings.Contains(r.headers, etag) || !strings.Contains(r.headers, "content-range: bytes 1000-1999/307200") {
			t.Errorf("ranged GET headers lack %s or the content range:\n%s", etag, r.headers)
		}
		r = curl(t, tokA, "-H", `If-None-Match: "`+sha256hex(blob)+`"`, dav+"/a/blob.bin")
		if r.status != 304 {
			t.Errorf("GET with the ETag in If-None-Match = %d, want 304", r.status)
		}
		r = curl(t, tokA, "-r", "0-9,20-29", dav+"/a/blob.bin")
		if r.status != 206 || !strings.Contains(r.headers, "multipart/byteranges") || !bytes.Contains(r.body, blob[20:30]) {
			t.Errorf("GET of two ranges = %d\n%s", r.status, r.headers)
		}
		r = curl(t, tokA, dav+"/a/ünï.txt")
		if r.status != 200 || string(r.body) != davTree["/a/ünï.txt"] {
			t.Errorf("GET of a unicode name = %d %q", r.status, r.body)
		}
		r = curl(t, tokA, "-H", "Accept: text/html", dav+"/a/")
		if r.status != 200 || !strings.Contains(r.headers, "text/html") || !bytes.Contains(r.body, []byte(`href="/dav/a/x.txt"`)) {
			t.Errorf("browser GET of a directory = %d\n%s", r.status, r.body)
		}
		r = curl(t, tokA, dav+"/a")
		if r.status != 301 || !strings.Contains(r.headers, "location: /dav/a/") {
			t.Errorf("GET of a directory without its slash = %d\n%s", r.status, r.headers)
		}
	})

	t.Run("refused writes", func(t *testing.T) {
		for _, m := range []string{"PUT", "DELETE", "MKCOL", "MOVE", "COPY", "PROPPATCH", "LOCK", "UNLOCK", "POST", "PATCH"} {
			r := curl(t, tokA, "-X", m, "-H", "Destination: "+dav+"/a/moved.txt", "--data-binary", "new", dav+"/a/x.txt")
			if r.status != 405 || !bytes.Contains(r.body, []byte("read-only")) || !strings.Contains(r.headers, "allow: options, get, head, propfind") {
				t.Errorf("%s = %d %q, want 405 naming read-only", m, r.status, r.body)
			}
		}
		r := curl(t, tokA, "-X", "MKCOL", dav+"/a/newdir/")
		if r.status != 405 {
			t.Errorf("MKCOL = %d", r.status)
		}
		if r := curl(t, tokA, dav+"/a/x.txt"); string(r.body) != davTree["/a/x.txt"] {
			t.Errorf("/a/x.txt after refused writes: %q", r.body)
		}
		for _, p := range []string{"/a/moved.txt", "/a/newdir/"} {
			if r := curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 0", dav+p); r.status != 404 {
				t.Errorf("%s exists after refused writes: %d", p, r.status)
			}
		}
	})

	t.Run("other tenant", func(t *testing.T) {
		missing := curl(t, tokA, dav+"/a/does-not-exist")
		if missing.status != 404 {
			t.Fatalf("GET of a missing file = %d", missing.status)
		}
		for _, u := range []string{
			"/b/secret-b.txt", "/b/", "/b", "/b/hidden-dir/", "/a/../b/secret-b.txt", "/a/%2e%2e/b/secret-b.txt",
			"/a/%2E%2E/%2E%2E/b/secret-b.txt", "/a/..%2fb/secret-b.txt", "/a/%00/../b", "/a%00/x.txt", "/a/x.txt%00",
			"/a/..\\b/secret-b.txt", "/%2fb/secret-b.txt", "/a/" + strings.Repeat("x/", 3000) + "y",
		} {
			for _, m := range []string{"GET", "PROPFIND"} {
				// net/http's mux redirects a path with ".." to its clean
				// form (the client's own words, cleaned): followed, it
				// must end in a 4xx like any other.
				r := curl(t, tokA, "-L", "-X", m, "-H", "Depth: 1", dav+u)
				if r.status < 400 || r.status >= 500 {
					t.Errorf("reader-a %s %s = %d, want a 4xx", m, u, r.status)
				}
				var shown []string
				for _, line := range strings.Split(r.headers, "\n") {
					if !strings.HasPrefix(line, "location:") {
						shown = append(shown, line)
					}
				}
				for _, name := range []string{"secret", "hidden", "/b"} {
					if bytes.Contains(r.body, []byte(name)) || strings.Contains(strings.Join(shown, "\n"), name) {
						t.Errorf("reader-a %s %s shows %q: %d %s %s", m, u, name, r.status, r.headers, r.body)
					}
				}
			}
		}
		if r := curl(t, tokA, dav+"/b/secret-b.txt"); r.status != 404 || !bytes.Equal(r.body, missing.body) {
			t.Errorf("/b's file is told apart from a missing one: %d %q vs %q", r.status, r.body, missing.body)
		}
		// reader-b, granted /b through one tool group, sees /b and not /a.
		r := curl(t, tokB, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/")
		if !bytes.Contains(r.body, []byte("/dav/b/")) || bytes.Contains(r.body, []byte("/dav/a/")) {
			t.Errorf("reader-b's PROPFIND /:\n%s", r.body)
		}
		if r := curl(t, tokB, dav+"/b/secret-b.txt"); string(r.body) != davTree["/b/secret-b.txt"] {
			t.Errorf("reader-b GET /b/secret-b.txt = %d %q", r.status, r.body)
		}
	})

	t.Run("snapshots", func(t *testing.T) {
		d.mustCall("guide_snapshot", map[string]any{"action": "create", "name": "before", "path": "/a"})
		d.mustCall("guide_cache_file", map[string]any{"path": "/a/x.txt", "content": "changed\n"})
		if r := curl(t, tokA, dav+"/.snapshots/before/x.txt"); r.status != 200 || string(r.body) != davTree["/a/x.txt"] {
			t.Errorf("GET /.snapshots/before/x.txt = %d %q, want the content before the change", r.status, r.body)
		}
		if r := curl(t, tokA, dav+"/a/x.txt"); string(r.body) != "changed\n" {
			t.Errorf("GET /a/x.txt = %q after the change", r.body)
		}
		r := curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/.snapshots/")
		if !bytes.Contains(r.body, []byte("<D:href>/dav/.snapshots/before/</D:href>")) {
			t.Errorf("PROPFIND /.snapshots/ lacks the snapshot:\n%s", r.body)
		}
		r = curl(t, tokA, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/.snapshots/before/")
		if !bytes.Contains(r.body, []byte("<D:href>/dav/.snapshots/before/sub/</D:href>")) {
			t.Errorf("PROPFIND of the snapshot's tree:\n%s", r.body)
		}
		if r := curl(t, tokA, "-X", "PUT", "--data-binary", "x", dav+"/.snapshots/before/x.txt"); r.status != 405 {
			t.Errorf("PUT into a snapshot = %d", r.status)
		}
		// reader-b may not read /a: the snapshot of /a is unknown to it.
		if r := curl(t, tokB, "-X", "PROPFIND", "-H", "Depth: 1", dav+"/.snapshots/"); bytes.Contains(r.body, []byte("before")) {
			t.Errorf("reader-b sees the snapshot of /a:\n%s", r.body)
		}
		if r := curl(t, tokB, dav+"/.snapshots/before/x.txt"); r.status != 404 {
			t.Errorf("reader-b GET of /a's snapshot = %d", r.status)
		}
	})

	var unauthTook time.Duration
	t.Run("unauthenticated", func(t *testing.T) {
		start := time.Now()
		defer func() { unauthTook = time.Since(start) }()
		for range 40 {
			if r := curl(t, "", "-X", "PROPFIND", "-H", "Depth: 1", dav+"/"); r.status != 401 {
				t.Fatalf("PROPFIND without a token = %d", r.status)
			}
		}
		if r := curl(t, "dfs1_0000000000000000_"+strings.Repeat("0", 64), dav+"/a/x.txt"); r.status != 401 || bytes.Contains(r.body, []byte("hello")) {
			t.Errorf("GET with a made-up token = %d %q", r.status, r.body)
		}
	})

	// Every request was audited: reads as allowed webdav calls naming
	// their path, reader-a's look at /b as denials, writes as denials (the
	// first 5 of a burst at once, the rest as one record when the burst's
	// window ends), the 40 unauthenticated requests as a burst too.
	recs := auditRecords(t, d.auditLog())
	var dav200, denied, refused, unauth int
	for _, r := range recs {
		switch {
		case r.Tool == "webdav" && r.Decision == audit.Allow && len(r.Paths) > 0:
			dav200++
		case r.Tool == "webdav" && r.Decision == audit.Deny && strings.Contains(strings.Join(r.Paths, " "), "/b"):
			denied++
		case r.Tool == "webdav" && r.Decision == audit.Deny && strings.Contains(r.Reason, "read-only"):
			refused++
		case r.Event == "auth" || r.Stage != "":
			unauth++
		}
	}
	// A burst writes its first refusals at once and the rest as one record
	// a window: 4 records when the 41 came within one window (an idle
	// machine takes well under a second), one a window more on a machine so
	// loaded that they took longer, and one more because the burst's window
	// starts at its first refusal, not at the subtest's start. Folding that
	// did not work writes 41.
	unauthBound := max(4, 3+int(unauthTook/audit.DefaultBurstWindow)+2)
	if dav200 < 15 || denied == 0 || refused < 5 || unauth == 0 || unauth > unauthBound {
		t.Errorf("audit: %d allowed webdav reads, %d denials naming /b, %d refused writes, %d records of refused authentications (want 1-%d for 41 refusals over %v)",
			dav200, denied, refused, unauth, unauthBound, unauthTook.Round(time.Millisecond))
	}
}

// TestWebDAVRclone reads the depot with rclone's webdav backend, a client
// depotfs's code had no hand in: lsf lists /a and nothing of /b, cat
// returns a file's bytes, check finds the tree equal to the files pushed
// (by sha256-less size and content comparison, --download).
func TestWebDAVRclone(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("rclone"); err != nil {
		t.Skip("rclone is not installed (Debian: apt-get install rclone; .ci/run installs it)")
	}
	d, tokA, _, blob := davDaemon(t)
	rclone := func(args ...string) string {
		t.Helper()
		all := append([]string{"--config", "/dev/null", "--webdav-url", d.base() + "/dav/", "--webdav-bearer-token", tokA, "--low-level-retries", "1", "--retries", "1"}, args...)
		out, err := exec.Command("rclone", all...).CombinedOutput()
		if err != nil {
			t.Fatalf("rclone %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	listed := strings.Fields(strings.ReplaceAll(rclone("lsf", "-R", ":webdav:"), " ", "_"))
	slices.Sort(listed)
	want := []string{"a/", "a/blob.bin", "a/name_with_space.md", "a/sub/", "a/sub/deep.txt", "a/x.txt", "a/ünï.txt"}
	if strings.Join(listed, ",") != strings.Join(want, ",") {
		t.Errorf("rclone lsf -R = %v, want %v", listed, want)
	}
	if got := rclone("cat", ":webdav:a/x.txt"); got != davTree["/a/x.txt"] {
		t.Errorf("rclone cat a/x.txt = %q", got)
	}
	if got := rclone("cat", "--offset", "4096", "--count", "100", ":webdav:a/blob.bin"); got != string(blob[4096:4196]) {
		t.Errorf("rclone cat --offset 4096 --count 100 differs")
	}
	local := t.TempDir()
	for p, c := range davTree {
		if !strings.HasPrefix(p, "/a/") {
			continue
		}
		f := filepath.Join(local, filepath.FromSlash(strings.TrimPrefix(p, "/a/")))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(local, "blob.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	out := rclone("check", "--download", local, ":webdav:a")
	if !strings.Contains(out, "0 differences found") || !strings.Contains(out, "5 matching files") {
		t.Errorf("rclone check --download:\n%s", out)
	}
	// A changed byte is found: check compares content, not only names.
	blob[7] ^= 0xff
	if err := os.WriteFile(filepath.Join(local, "blob.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	all := []string{"--config", "/dev/null", "--webdav-url", d.base() + "/dav/", "--webdav-bearer-token", tokA, "check", "--download", local, ":webdav:a"}
	if out, err := exec.Command("rclone", all...).CombinedOutput(); err == nil || !strings.Contains(string(out), "1 differences found") {
		t.Errorf("rclone check of a changed file: %v\n%s", err, out)
	}
}

// stalledCut sends a GET for u (size bytes) on a connection whose
// receive buffer is small from its start (set before connecting, so the
// window stays small and the stall reaches the server at once), reads
// nothing for 4 s, then reads on: the server must have closed the
// connection (EOF within the deadline) short of size bytes.
func stalledCut(t *testing.T, tok, u string, size int) {
	t.Helper()
	// The server's socket buffers what the client does not read, up to
	// tcp_wmem's maximum: a file that fits would be sent whole, cut or not.
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			if max, _ := strconv.Atoi(f[2]); max >= size {
				t.Skipf("tcp_wmem allows %d bytes of send buffer: a stall of a %d-byte response would not reach the server", max, size)
			}
		}
	}
	pu, _ := url.Parse(u)
	dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		if cerr := rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) }); cerr != nil {
			return cerr
		}
		return err
	}}
	c, err := dialer.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", pu.EscapedPath(), pu.Host, tok)
	br := bufio.NewReaderSize(c, 4096)
	if _, err := br.Peek(1); err != nil {
		t.Fatalf("stalled GET: no answer: %v", err)
	}
	time.Sleep(4 * time.Second) // the stall: the server's idle timeout is 2 s
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	n, err := io.Copy(io.Discard, br)
	if err != nil || n >= int64(size) {
		t.Errorf("after a 4 s stall the reader got %d of %d bytes and then %v; want the connection closed short of the file", n, size, err)
	}
}

// TestWebDAVSlowReader GETs an 8 MiB file over WebDAV on a connection
// that stops reading: the server cuts the response once
// --http-body-idle-timeout (2 s) passes rather than hold the file open
// for the client's pace, and answers the next request at once.
func TestWebDAVSlowReader(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	op, _ := issueToken(t, tokens, "operator", "*:/:rw")
	reader, _ := issueToken(t, tokens, "reader", "*:/big:r")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: op},
		args: []string{"--tokens", tokens, "--rate-calls", "0", "--http-body-idle-timeout", "2s"}})
	size := 8 << 20
	src := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(src, pseudoRandom(size, 30), 0o644); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(t.TempDir(), "op.token")
	if err := os.WriteFile(tokFile, []byte(op), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--token-file", tokFile, "--to", "/big", src); code != 0 {
		t.Fatalf("push: %d %s %s", code, stdout, stderr)
	}
	u := d.base() + "/dav/big/data.bin"
	stalledCut(t, reader, u, size)
	if _, err := exec.LookPath("curl"); err != nil {
		return
	}
	if r := curl(t, reader, "-r", "0-9", u); r.status != 206 || len(r.body) != 10 {
		t.Errorf("a GET after the stalled one = %d, %d bytes", r.status, len(r.body))
	}
}

// TestWebDAVLitmus runs the litmus WebDAV test suite against /dav/. Every
// suite of litmus begins by creating a collection of its own (MKCOL) and
// stops if it cannot, so against a read-only server only their first step
// runs: OPTIONS, which must pass (DAV class 1 announced) in each suite,
// and the MKCOL, which must be refused with 405 and create nothing.
func TestWebDAVLitmus(t *testing.T) {
	t.Parallel()
	litmus := needProgram(t, "litmus") // Debian: litmus
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	dav := d.base() + "/dav/"
	cmd := exec.Command(litmus, "-k", dav)
	cmd.Dir = t.TempDir() // litmus writes debug.log and child.log here
	suites := []string{"basic", "copymove", "props", "locks", "http"}
	cmd.Env = append(os.Environ(), "TESTS="+strings.Join(suites, " "))
	// litmus -k exits 0 whatever failed: its report is the result.
	out, _ := cmd.CombinedOutput()
	text := string(out)
	for _, s := range suites {
		if !strings.Contains(text, "-> running `"+s+"'") {
			t.Errorf("litmus did not run suite %s:\n%s", s, text)
		}
	}
	if n := strings.Count(text, "init.................. pass"); n != len(suites) {
		t.Errorf("litmus's OPTIONS step passed in %d of %d suites:\n%s", n, len(suites), text)
	}
	if n := strings.Count(text, "begin................. FAIL (Could not create new collection `/dav/litmus/' for tests: 405 Method Not Allowed"); n != len(suites) {
		t.Errorf("litmus's MKCOL was refused with 405 in %d of %d suites:\n%s", n, len(suites), text)
	}
	if _, err := exec.LookPath("curl"); err == nil {
		if r := curl(t, "", "-X", "PROPFIND", "-H", "Depth: 0", dav+"litmus/"); r.status != 404 {
			t.Errorf("PROPFIND /dav/litmus/ after litmus = %d, want 404 (nothing created)", r.status)
		}
	}
}
