package integration_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// initializeAs posts an initialize of a stateful revision with a bearer
// token and returns the status, the body and the session id.
func initializeAs(t testing.TB, url, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, "", ""
	}
	defer res.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, res.Body)
	return res.StatusCode, b.String(), res.Header.Get("Mcp-Session-Id")
}

// TestSessionFloodPerIdentity: a token without grants opening sessions
// as fast as it can (and abandoning them) only churns its own: it holds
// at most its limit, not the server's, and another identity's initialize
// keeps working during the flood; its latency is reported.
func TestSessionFloodPerIdentity(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	flooder, _ := issueToken(t, tokens, "flooder")
	other, _ := issueToken(t, tokens, "other", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: other},
		args: []string{"--tokens", tokens, "--max-sessions", "200", "--max-conns-per-addr", "0"}})

	var opened, refused atomic.Int64
	var refusal atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	stopFlood := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopFlood()
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				switch st, body, _ := initializeAs(t, d.url, flooder); st {
				case http.StatusOK:
					opened.Add(1)
				case http.StatusServiceUnavailable:
					refused.Add(1)
					refusal.Store(body)
				default:
					t.Errorf("flood initialize: %d %s", st, body)
					return
				}
			}
		})
	}
	waitFor(t, 60*time.Second, "the flooder to pass its limit thrice", func() bool { return opened.Load() > 3*64 })
	var took []time.Duration
	for i := range 20 {
		start := time.Now()
		st, body, sid := initializeAs(t, d.url, other)
		took = append(took, time.Since(start))
		if st != http.StatusOK || sid == "" {
			t.Fatalf("another identity's initialize %d during the flood: %d %s", i, st, body)
		}
	}
	stopFlood()
	slices.Sort(took)
	t.Logf("flood: %d sessions opened, %d refused; another identity's initialize during it: median %v, max %v",
		opened.Load(), refused.Load(), took[len(took)/2], took[len(took)-1])
	if n := liveSessions(t, d, other); n > 64+20 {
		t.Errorf("%d sessions live after the flood; want at most the flooder's limit (64) and the other identity's 20", n)
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d of the flooder's initializes refused (%v); want none: it ends its own idle sessions", n, refusal.Load())
	}
}

// tenant is one identity of a multi-tenant daemon: its token and client.
type tenant struct {
	token string
	c     *mcpClient
}

// call invokes a tool as the tenant.
func (tn tenant) call(t testing.TB, tool string, args map[string]any) envelope {
	t.Helper()
	env, err := callWith(tn.c.mcp, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// twoTenants starts a daemon with tokens for A (grant /a) and B (grant
// /b) and connects both.
func twoTenants(t *testing.T, args ...string) (*daemon, tenant, tenant) {
	t.Helper()
	tokens := t.TempDir() + "/tokens.json"
	tokA, _ := issueToken(t, tokens, "tenant-a", "*:/a:rw")
	tokB, _ := issueToken(t, tokens, "tenant-b", "*:/b:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokA},
		args: append([]string{"--tokens", tokens}, args...)})
	return d, tenant{tokA, d.connect(clientAuth{bearer: tokA})}, tenant{tokB, d.connect(clientAuth{bearer: tokB})}
}

// TestUploadCapsPerIdentity: A beginning raw uploads without sending them
// reaches its own limit and B can still begin one; A's abandoned chunked
// uploads reach their own limit and B's write still fits in the store.
// The store is 2 MiB: A's 15 chunks of 128 KiB, were they not capped,
// would leave no room for B's 768 KiB.
func TestUploadCapsPerIdentity(t *testing.T) {
	t.Parallel()
	d, a, b := twoTenants(t, "--max-store-size", "2MiB", "--max-file-size", "1MiB")
	_ = d
	begun := 0
	for ; begun < 1100; begun++ {
		env := a.call(t, "guide_begin_upload", map[string]any{"path": fmt.Sprintf("/a/raw-%d.bin", begun)})
		if !env.Success {
			if !strings.Contains(env.Error.Message, "max-raw-uploads-per-identity") {
				t.Errorf("A's refusal after %d raw uploads: %+v; want it to name --max-raw-uploads-per-identity", begun, env.Error)
			}
			break
		}
	}
	if begun > 64 {
		t.Errorf("A began %d raw uploads without sending them; want at most 64", begun)
	}
	if env := b.call(t, "guide_begin_upload", map[string]any{"path": "/b/raw.bin"}); !env.Success {
		t.Fatalf("B could not begin a raw upload after A began %d: %+v", begun, env.Error)
	}

	// A abandons chunked uploads of 128 KiB chunks until refused.
	chunk := pseudoRandom(128<<10, 7)
	staged := 0
	for i := range 15 {
		env := a.call(t, "guide_read_file", map[string]any{"path": fmt.Sprintf("/a/big-%d.bin", i), "upload_id": fmt.Sprintf("big-%d", i),
			"chunk_index": 0, "chunk_count": 4, "content": base64.StdEncoding.EncodeToString(chunk), "encoding": "base64",
			"sha256": strings.Repeat("0", 64)})
		if !env.Success {
			if !strings.Contains(env.Error.Message, "max-upload-bytes-per-identity") {
				t.Errorf("A's refused chunk: %+v; want it to name --max-upload-bytes-per-identity", env.Error)
			}
			break
		}
		staged += len(chunk)
	}
	t.Logf("A began %d raw uploads and staged %d bytes before its limits", begun, staged)
	data := pseudoRandom(768<<10, 8)
	if env := b.call(t, "guide_cache_file", map[string]any{"path": "/b/file.bin", "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"}); !env.Success {
		t.Fatalf("B's 768 KiB write after A staged %d bytes of a 2 MiB store: %+v", staged, env.Error)
	}
	stats := a.call(t, "guide_cache_stats", map[string]any{})
	caller, _ := stats.Data["caller"].(map[string]any)
	limits, _ := caller["limits"].([]any)
	names := map[string]bool{}
	for _, l := range limits {
		q, _ := l.(map[string]any)
		names[fmt.Sprint(q["name"])] = true
	}
	for _, n := range []string{"sessions", "raw_uploads", "upload_bytes"} {
		if !names[n] {
			t.Errorf("guide_cache_stats shows A no %s limit: %v", n, caller)
		}
	}
}

// TestUploadIDsPerIdentity: upload ids are per identity. B choosing the
// id of A's upload starts its own upload, learns nothing of A's, cannot
// drop it, and does not see it listed; A's upload completes.
func TestUploadIDsPerIdentity(t *testing.T) {
	t.Parallel()
	d, a, b := twoTenants(t)
	whole := pseudoRandom(2000, 9)
	sum := sha256hex(whole)
	send := func(tn tenant, path string, i int, sha string) envelope {
		return tn.call(t, "guide_read_file", map[string]any{"path": path, "upload_id": "shared-id", "chunk_index": i, "chunk_count": 2,
			"content": base64.StdEncoding.EncodeToString(whole[i*1000 : (i+1)*1000]), "encoding": "base64", "sha256": sha})
	}
	if env := send(a, "/a/hidden-upload.bin", 0, sum); !env.Success {
		t.Fatalf("A's first chunk: %+v", env.Error)
	}
	env := send(b, "/b/mine.bin", 0, strings.Repeat("1", 64))
	if raw, _ := json.Marshal(env); !env.Success || strings.Contains(string(raw), "hidden-upload") {
		t.Errorf("B choosing A's upload id: %s; want its own upload, nothing of A's", raw)
	}
	drop := b.call(t, "guide_drop_uploads", map[string]any{"upload_ids": []any{"shared-id"}, "idle_seconds": 0})
	if raw, _ := json.Marshal(drop); strings.Contains(string(raw), "hidden-upload") {
		t.Errorf("B dropping the id: %s; names A's upload", raw)
	}
	list := b.call(t, "guide_list_uploads", map[string]any{})
	if raw, _ := json.Marshal(list); strings.Contains(string(raw), "hidden-upload") {
		t.Errorf("B's list: %s; shows A's upload", raw)
	}
	if env := send(a, "/a/hidden-upload.bin", 1, sum); !env.Success || !uploadComplete(env) {
		t.Fatalf("A's last chunk after B used the same id: %+v", env.Error)
	}
	if got, err := os.ReadFile(d.path("/a/hidden-upload.bin")); err != nil || !bytes.Equal(got, whole) {
		t.Errorf("A's file through the mount: %v", err)
	}
}

// TestEvictionNamesOnlyReadable: A filling the store evicts B's file; A's
// replies count it but never name it. Files of 256 KiB in a 1 MiB store:
// A's six writes need more than the store holds.
func TestEvictionNamesOnlyReadable(t *testing.T) {
	t.Parallel()
	_, a, b := twoTenants(t, "--max-store-size", "1MiB", "--max-file-size", "512KiB")
	put := func(tn tenant, path string, seed uint64) envelope {
		return tn.call(t, "guide_cache_file", map[string]any{"path": path,
			"content": base64.StdEncoding.EncodeToString(pseudoRandom(256<<10, seed)), "encoding": "base64"})
	}
	if env := put(b, "/b/merger-plan-acme-2027.pdf", 1); !env.Success {
		t.Fatalf("B's write: %+v", env.Error)
	}
	evicted := 0.0
	for i := range 6 {
		env := put(a, fmt.Sprintf("/a/fill-%d.bin", i), uint64(10+i))
		if !env.Success {
			t.Fatalf("A's write %d: %+v", i, env.Error)
		}
		raw, _ := json.Marshal(env)
		if strings.Contains(string(raw), "/b/") || strings.Contains(string(raw), "merger") {
			t.Fatalf("A's reply names B's file: %s", raw)
		}
		n, _ := env.Stats["evicted_files"].(float64)
		evicted += n
	}
	if evicted == 0 {
		t.Fatal("A's writes evicted nothing: the test did not fill the store")
	}
}

// gatedBody yields first, then blocks until open is closed, then yields
// rest: a PUT whose sender holds it open.
type gatedBody struct {
	first, rest []byte
	open        chan struct{}
	stage       int
	waiting     atomic.Bool // first is sent and the body waits for open
}

func (g *gatedBody) Read(p []byte) (int, error) {
	switch g.stage {
	case 0:
		g.stage++
		return copy(p, g.first), nil
	case 1:
		g.waiting.Store(true)
		<-g.open
		g.stage++
	}
	if len(g.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p, g.rest)
	g.rest = g.rest[n:]
	return n, nil
}

// TestRevokedTokenCutsPUT: a token revoked (and SIGHUP sent) while its
// raw upload's PUT is in flight loses the PUT: it is cut, audited as
// revoked, and nothing is stored, although the client then sends the
// rest of the body.
func TestRevokedTokenCutsPUT(t *testing.T) {
	t.Parallel()
	tokens := t.TempDir() + "/tokens.json"
	tok, id := issueToken(t, tokens, "uploader", "*:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tok}, args: []string{"--tokens", tokens}})
	data := pseudoRandom(64<<10, 3)
	u := beginUpload(t, d, map[string]any{"path": "/in/flight.bin", "sha256": sha256hex(data)})
	body := &gatedBody{first: data[:1024], rest: data[1024:], open: make(chan struct{})}
	// The PUT runs off the test's goroutine, so it reports its error
	// rather than failing the test there (which left the test waiting
	// for it forever): a connection the server cuts before the client
	// finished sending fails with a broken pipe instead of a reply.
	type putResult struct {
		r   putReply
		err error
	}
	done := make(chan putResult, 1)
	go func() {
		r, err := tryPut(u, body, int64(len(data)), tok)
		done <- putResult{r, err}
	}()
	waitFor(t, 10*time.Second, "the PUT's first bytes to be sent", body.waiting.Load)
	depotfsCommand(t, "token", "revoke", "--tokens", tokens, id)
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	cut := false
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && !cut; time.Sleep(50 * time.Millisecond) {
		for _, r := range auditRecords(t, d.auditLog()) {
			cut = cut || r.Stage == "revoked" && r.TokenID == id && strings.Contains(r.Reason, "raw upload")
		}
	}
	close(body.open)
	res := <-done
	if res.err == nil && (res.r.Status == http.StatusOK || res.r.Env.Success) {
		t.Errorf("the revoked token's PUT finished %d %+v; want it cut", res.r.Status, res.r.Env)
	}
	if !cut {
		t.Error("no audit record of the cut upload")
	}
	if _, err := os.Stat(d.path("/in/flight.bin")); err == nil {
		t.Error("the revoked token's upload was stored")
	}
}

// TestTricklingBodyCut: a body sent a few bytes at a time, never stalling
// for --http-body-idle-timeout, is cut by --http-body-min-rate.
func TestTricklingBodyCut(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--http-body-idle-timeout", "2s", "--http-body-min-rate", "1KiB"}})
	data := pseudoRandom(1<<20, 4)
	u := beginUpload(t, d, map[string]any{"path": "/slow/trickle.bin", "sha256": sha256hex(data)})
	addr := hostOf(t, d.url)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := u[strings.Index(u, "/upload/"):]
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n\r\n", path, addr, len(data))
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() {
		io.Copy(io.Discard, c)
		closed <- time.Since(start)
	}()
	for i := 0; ; i++ {
		select {
		case took := <-closed:
			t.Logf("the trickling PUT was closed after %v", took)
			if took > 15*time.Second {
				t.Errorf("closed after %v; want soon after 2s", took)
			}
			if _, err := os.Stat(d.path("/slow/trickle.bin")); err == nil {
				t.Error("the trickled file was stored")
			}
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("a body trickling 10 bytes every 200ms was still open after 30s")
		}
		c.Write(data[i*10 : i*10+10])
	}
}
