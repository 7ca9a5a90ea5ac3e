package integration_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// putReply is the response of a raw upload's PUT: guide_cache_file's
// envelope.
type putReply struct {
	Status int
	Env    envelope
}

// put sends body to url with an HTTP PUT of size bytes (and the bearer
// token, if any) and decodes the response envelope.
func put(t testing.TB, rawURL string, body io.Reader, size int64, bearer string) putReply {
	t.Helper()
	r, err := tryPut(rawURL, body, size, bearer)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryPut is put returning its error instead of failing the test, for a
// PUT made off the test's goroutine or one the server may cut.
func tryPut(rawURL string, body io.Reader, size int64, bearer string) (putReply, error) {
	var r putReply
	req, err := http.NewRequest(http.MethodPut, rawURL, body)
	if err != nil {
		return r, err
	}
	req.ContentLength = size
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("PUT: %w", err)
	}
	defer resp.Body.Close()
	r.Status = resp.StatusCode
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &r.Env); err != nil {
		return r, fmt.Errorf("PUT response %d %q: %w", resp.StatusCode, raw, err)
	}
	return r, nil
}

// beginUpload calls guide_begin_upload and returns its upload_url.
func beginUpload(t testing.TB, d *daemon, args map[string]any) string {
	t.Helper()
	env := d.mustCall("guide_begin_upload", args)
	u, _ := env.Data["upload_url"].(string)
	if env.Data["method"] != "PUT" || !strings.Contains(u, "/upload/") {
		t.Fatalf("guide_begin_upload data %v", env.Data)
	}
	return u
}

// writeRandomFile writes size pseudo-random bytes to a new file and
// returns its path and sha256.
func writeRandomFile(t testing.TB, size int64) (string, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "upload.bin")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	for off, i := int64(0), uint64(0); off < size; i++ {
		block := pseudoRandom(int(min(1<<20, size-off)), i)
		w.Write(block)
		off += int64(len(block))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return p, hex.EncodeToString(h.Sum(nil))
}

// hashFile returns the sha256 of the file at p.
func hashFile(t testing.TB, p string) string {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestRawUpload sends a file larger than any MCP request with one HTTP PUT
// and reads it back through the mount; the response is guide_cache_file's
// reply, sent once the mount shows the file.
func TestRawUpload(t *testing.T) {
	t.Parallel()
	// Larger than the MCP request limit (twice 16 MiB, plus 1 MiB) and one
	// call's content, so only the raw PUT can carry it; 300 MiB in a soak.
	size := bySoak[int64](40<<20, 300<<20)
	file, sum := writeRandomFile(t, size)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-file-size", "1GiB"}})
	u := beginUpload(t, d, map[string]any{"path": "/big/file.bin", "size": size, "sha256": sum, "mode": "0640"})
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := put(t, u, f, size, "")
	if r.Status != http.StatusOK || !r.Env.Success {
		t.Fatalf("PUT: %d %+v", r.Status, r.Env.Error)
	}
	if r.Env.Data["status"] != "created" || r.Env.Data["sha256"] != sum || r.Env.Data["size"] != float64(size) || r.Env.Data["mount_path"] != d.path("/big/file.bin") {
		t.Errorf("reply data %v", r.Env.Data)
	}
	// The reply came after the mount showed the file: no polling.
	if got := hashFile(t, d.path("/big/file.bin")); got != sum {
		t.Errorf("the mount reads sha256 %s, want %s", got, sum)
	}
	st, err := os.Stat(d.path("/big/file.bin"))
	if err != nil || st.Size() != size {
		t.Errorf("stat through the mount: %v, %v", st, err)
	}
}

// TestRawUploadRefused sends each kind of bad raw upload: each is refused,
// stores nothing (the mount and the store's counts are unchanged) and is
// audited.
func TestRawUploadRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	tokA, _ := issueToken(t, tokens, "a", "guide:/:rw")
	tokB, _ := issueToken(t, tokens, "b", "guide:/:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tokA},
		args: []string{"--tokens", tokens, "--upload-url-ttl", "2s"}})
	data := pseudoRandom(3<<20, 1)
	sum := sha256hex(data)
	body := func() io.Reader { return strings.NewReader(string(data)) }

	stats := func() string {
		env := d.mustCall("guide_cache_stats", map[string]any{})
		st := env.Data["store"].(map[string]any)
		return fmt.Sprint(st["files"], st["blobs"], st["stored_bytes"], st["uploads"], st["upload_bytes"])
	}
	// A used upload first: its URL is then refused.
	used := beginUpload(t, d, map[string]any{"path": "/ok.bin", "sha256": sum})
	if r := put(t, used, body(), int64(len(data)), tokA); !r.Env.Success {
		t.Fatalf("PUT: %+v", r.Env.Error)
	}
	before, counts := snapshot(t, d.mount), stats()
	audited := len(auditRecords(t, d.auditLog()))

	tests := []struct {
		name   string
		begin  map[string]any
		send   func(t *testing.T, u string) putReply
		status int
		want   string
	}{
		{"hash mismatch", map[string]any{"path": "/bad/hash.bin", "sha256": sha256hex([]byte("other"))},
			func(t *testing.T, u string) putReply { return put(t, u, body(), int64(len(data)), tokA) }, 400, "does not match"},
		{"size mismatch", map[string]any{"path": "/bad/size.bin", "size": len(data) + 1},
			func(t *testing.T, u string) putReply { return put(t, u, body(), int64(len(data)), tokA) }, 400, "announced"},
		{"reused URL", nil,
			func(t *testing.T, _ string) putReply { return put(t, used, body(), int64(len(data)), tokA) }, 404, "already used"},
		{"unknown URL", nil,
			func(t *testing.T, _ string) putReply {
				return put(t, strings.Replace(used, "/upload/", "/upload/f", 1), body(), int64(len(data)), tokA)
			}, 404, "unknown"},
		// To another identity the URL is as unknown as a made-up one.
		{"another identity", map[string]any{"path": "/bad/who.bin"},
			func(t *testing.T, u string) putReply { return put(t, u, body(), int64(len(data)), tokB) }, 404, "unknown"},
		{"expired URL", map[string]any{"path": "/bad/late.bin"},
			func(t *testing.T, u string) putReply {
				time.Sleep(2100 * time.Millisecond) // the URL's TTL is 2s: waiting is the test
				return put(t, u, body(), int64(len(data)), tokA)
			}, 404, "expired"},
		{"over the file limit", map[string]any{"path": "/bad/big.bin"},
			func(t *testing.T, u string) putReply { return announcePut(t, u, tokA, 200<<20) }, 413, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := ""
			if tt.begin != nil {
				u = beginUpload(t, d, tt.begin)
			}
			r := tt.send(t, u)
			if r.Status != tt.status || r.Env.Success || !strings.Contains(r.Env.Error.Message, tt.want) {
				t.Errorf("PUT: %d %+v, want %d and a message containing %q", r.Status, r.Env.Error, tt.status, tt.want)
			}
		})
	}
	t.Run("client disconnects halfway", func(t *testing.T) {
		u := beginUpload(t, d, map[string]any{"path": "/bad/cut.bin", "sha256": sum})
		disconnectHalfway(t, u, tokA, data)
		// The refusal is audited once the server has seen the body end.
		waitFor(t, 10*time.Second, "the cut PUT's audit record", func() bool {
			recs := auditRecords(t, d.auditLog())
			last := recs[len(recs)-1]
			return last.Tool == "guide_begin_upload" && last.Error != "" && strings.Contains(strings.Join(last.Paths, " "), "/bad/cut.bin")
		})
	})
	if diff := diffSnapshots(before, snapshot(t, d.mount)); diff != "" {
		t.Errorf("refused uploads changed the mount:\n%s", diff)
	}
	if got := stats(); got != counts {
		t.Errorf("refused uploads changed the store: files, blobs, stored bytes, uploads, upload bytes were %s, are %s", counts, got)
	}
	recs := auditRecords(t, d.auditLog())[audited:]
	refused := 0
	for _, r := range recs {
		if r.Tool == "guide_begin_upload" && r.Error != "" {
			refused++
		}
	}
	if refused != len(tests)+1 {
		t.Errorf("%d refused PUTs audited, want %d: %+v", refused, len(tests)+1, recs)
	}
}

// disconnectHalfway opens a connection to rawURL, announces all of data
// and sends half of it, then closes the connection.
func disconnectHalfway(t testing.TB, rawURL, bearer string, data []byte) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", u.Path, u.Host, bearer, len(data))
	c.Write(data[:len(data)/2])
	c.Close()
}

// announcePut sends the headers of a PUT of size bytes to rawURL, without
// the body, and returns the response the server sends at once.
func announcePut(t testing.TB, rawURL, bearer string, size int64) putReply {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "PUT %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", u.Path, u.Host, bearer, size)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := putReply{Status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&r.Env); err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRequestOverLimit sends an MCP request whose body is announced over
// the request limit: the reply is a JSON-RPC error that names the limit and
// the ways to send more.
func TestRequestOverLimit(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	u, err := url.Parse(d.url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", u.Path, u.Host, 256<<20)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msg struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge ||
		!strings.Contains(msg.Error.Message, "limit of") || !strings.Contains(msg.Error.Message, "guide_begin_upload") || !strings.Contains(msg.Error.Message, "guide_read_file") {
		t.Errorf("reply %d %+v", resp.StatusCode, msg.Error)
	}
}
