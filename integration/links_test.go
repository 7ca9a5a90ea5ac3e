package integration_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rssKiB returns the resident set of process pid in KiB.
func rssKiB(t testing.TB, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// TestResourceLinks reads a large file the way issue-free agents should:
// the fs and provider read tools, called with the official Go SDK, hand
// out a resource_link instead of base64; the link reads the same bytes
// with Go's HTTP client and with curl ranges (ETag = sha256) while the
// server's memory stays flat; it answers 404, naming nothing, to another
// identity, to a changed link, and once its version is no longer kept;
// and a reader that stops reading is cut off. DEPOTFS_SOAK=1 uses a
// 100 MiB file (the issue's figure), 8 MiB otherwise.
func TestResourceLinks(t *testing.T) {
	t.Parallel()
	size := bySoak(8<<20, 100<<20)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	op, _ := issueToken(t, tokens, "operator", "*:/:rw")
	reader, _ := issueToken(t, tokens, "reader", "fs:/big:r", "provider:/big:r")
	other, _ := issueToken(t, tokens, "other", "*:/:r")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: op},
		args: []string{"--tokens", tokens, "--tools", "guide,provider,fs", "--keep-versions", "1", "--rate-calls", "0", "--http-body-idle-timeout", "2s"}})

	src := filepath.Join(t.TempDir(), "data.bin")
	data := pseudoRandom(size, 28)
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(t.TempDir(), "op.token")
	if err := os.WriteFile(tokFile, []byte(op), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runDepotfs(t, "push", "--url", d.url, "--token-file", tokFile, "--to", "/big", src); code != 0 {
		t.Fatalf("push: %d %s %s", code, stdout, stderr)
	}
	sum := sha256hex(data)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "depotfs-links-test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: d.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearerTransport{reader}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })

	// fs read: no content, the link in the reply and as a resource_link.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read", Arguments: map[string]any{"path": "big/data.bin"}})
	if err != nil || res.IsError {
		t.Fatalf("fs read: %v %+v", err, res)
	}
	var reply struct {
		Content   string `json:"content"`
		Truncated bool   `json:"truncated"`
		Link      string `json:"link"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatal(err)
	}
	var link *sdk.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*sdk.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || link.URI != reply.Link || reply.Content != "" || !reply.Truncated || link.Size == nil || *link.Size != int64(size) {
		t.Fatalf("fs read of a %d-byte file: reply %+v (%d bytes of JSON), link %+v", size, reply, len(raw), link)
	}
	if len(raw) > 4096 {
		t.Errorf("fs read's reply is %d bytes: the content came inline", len(raw))
	}
	// provider read_file_binary: a short text and the same link.
	pres, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_file_binary", Arguments: map[string]any{"file_path": "/big/data.bin"}})
	if err != nil || pres.IsError || len(pres.Content) != 2 {
		t.Fatalf("read_file_binary: %v %+v", err, pres)
	}
	if l, ok := pres.Content[1].(*sdk.ResourceLink); !ok || l.URI != link.URI {
		t.Errorf("read_file_binary's link %+v differs from fs read's %s", pres.Content[1], link.URI)
	}

	// fs info and get_file_stats hand out the same link directly.
	for _, call := range []struct{ tool, arg string }{{"info", "big/data.bin"}, {"get_file_stats", "/big/data.bin"}} {
		ires, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: call.tool, Arguments: map[string]any{"path": call.arg}})
		if err != nil || ires.IsError {
			t.Fatalf("%s: %v %+v", call.tool, err, ires)
		}
		raw, _ := json.Marshal(ires.StructuredContent)
		var info struct {
			Link string `json:"link"`
		}
		if err := json.Unmarshal(raw, &info); err != nil || info.Link != link.URI {
			t.Errorf("%s's link %q, want %q (%v)", call.tool, info.Link, link.URI, err)
		}
	}

	get := func(tok, u string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		h := sha256.New()
		var head []byte
		n, err := io.Copy(io.MultiWriter(h, writerFunc(func(p []byte) { head = append(head, p[:min(len(p), 4096-len(head))]...) })), resp.Body)
		if err != nil {
			t.Fatalf("GET %s: body after %d bytes: %v", u, n, err)
		}
		resp.Header.Set("X-Test-Sha256", hex.EncodeToString(h.Sum(nil)))
		resp.ContentLength = n
		return resp, head
	}

	pid := d.cmd.Process.Pid
	before := rssKiB(t, pid)
	start := time.Now()
	resp, _ := get(reader, link.URI)
	took := time.Since(start)
	grew := rssKiB(t, pid) - before
	if resp.StatusCode != 200 || resp.Header.Get("X-Test-Sha256") != sum || resp.Header.Get("ETag") != `"`+sum+`"` {
		t.Fatalf("GET of the link = %d, sha256 %s, ETag %s; want 200 and %s", resp.StatusCode, resp.Header.Get("X-Test-Sha256"), resp.Header.Get("ETag"), sum)
	}
	t.Logf("GET of %d bytes through the link: %v; server RSS %+d KiB (race-built daemon, shared machine)", size, took, grew)
	if grew > 16<<10 {
		t.Errorf("server RSS grew %d KiB over one GET of %d bytes, want < 16 MiB", grew, size)
	}

	// curl ranges, the first MiB and the tail, and If-Range with the ETag.
	r := curl(t, reader, "-r", "0-1048575", link.URI)
	if r.status != 206 || sha256hex(r.body) != sha256hex(data[:1<<20]) {
		t.Errorf("curl -r 0-1048575 = %d, %d bytes", r.status, len(r.body))
	}
	r = curl(t, reader, "-r", fmt.Sprintf("%d-", size-1000), link.URI)
	if r.status != 206 || string(r.body) != string(data[size-1000:]) {
		t.Errorf("curl of the last 1000 bytes = %d, %d bytes", r.status, len(r.body))
	}
	r = curl(t, reader, "-r", "10-19", "-H", `If-Range: "`+sum+`"`, link.URI)
	if r.status != 206 || string(r.body) != string(data[10:20]) {
		t.Errorf("If-Range with the ETag = %d", r.status)
	}

	// Another identity (with grants on the file), a changed link, no
	// credentials: nothing named.
	notFound := func(what, tok, u string) {
		t.Helper()
		resp, body := get(tok, u)
		if resp.StatusCode != 404 || string(body) != "not found\n" {
			t.Errorf("%s: %d %q, want 404 \"not found\"", what, resp.StatusCode, body[:min(len(body), 64)])
		}
	}
	notFound("another identity's GET", other, link.URI)
	notFound("the operator's GET", op, link.URI)
	u, _ := url.Parse(link.URI)
	parts := strings.Split(u.Path, "/") // "", "files", tag, rev, "big", "data.bin"
	tag := []byte(parts[2])
	tag[0] ^= 1
	notFound("a changed tag", reader, u.Scheme+"://"+u.Host+strings.Join(append(append(parts[:2:2], string(tag)), parts[3:]...), "/"))
	notFound("another revision", reader, strings.Replace(link.URI, "/"+parts[3]+"/", "/"+parts[3]+"1/", 1))
	notFound("a traversal", reader, strings.Replace(link.URI, "/big/", "/big/../etc/", 1))
	notFound("a path changed", reader, strings.Replace(link.URI, "/big/data.bin", "/big/data.bin2", 1))
	if resp, _ := get("", link.URI); resp.StatusCode != 401 {
		t.Errorf("GET without credentials = %d, want 401", resp.StatusCode)
	}

	// A reader that stops reading is cut once --http-body-idle-timeout
	// passes: the response does not hold the server for ever.
	stalledCut(t, reader, link.URI, size)

	// The link is pinned to its version: after one change (kept, with
	// --keep-versions 1) it still reads the old bytes; after two it is
	// gone and answers 404.
	d.mustCall("guide_cache_file", map[string]any{"path": "/big/data.bin", "content": "v2"})
	if resp, _ := get(reader, link.URI, "Range", "bytes=0-99"); resp.StatusCode != 206 || resp.Header.Get("X-Test-Sha256") != sha256hex(data[:100]) {
		t.Errorf("the link after one change = %d, want the old version's bytes", resp.StatusCode)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/big/data.bin", "content": "v3"})
	notFound("the link once its version is gone", reader, link.URI)
}

// writerFunc is a writer that hands each write to a function.
type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
