package mcpserver_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Long content over HTTP goes past mcp-go lifted out of the body (package
// lift) and reaches the tools exactly as sent: text with escapes, batch
// entries and base64 chunks read back byte for byte.
func TestLiftedContent(t *testing.T) {
	h := newHarnessOver(t, nil, "http")
	text := strings.Repeat("quote \" backslash \\ tab \t newline \n é ☃ 😀 \u2028 ", 4000) // > 64 KiB of JSON
	h.ok("guide_cache_file", m{"path": "/lift/text.txt", "content": text}, nil)
	if got := string(h.read("/lift/text.txt")); got != text {
		t.Fatalf("text stored as %d bytes, want %d, differing", len(got), len(text))
	}

	a, b := strings.Repeat("a\"", 50000), strings.Repeat("b\\", 50000)
	h.ok("guide_cache_files", m{"files": []any{
		m{"path": "/lift/a.txt", "content": a},
		m{"path": "/lift/small.txt", "content": "small"},
		m{"path": "/lift/b.txt", "content": b},
	}}, nil)
	for p, want := range map[string]string{"/lift/a.txt": a, "/lift/small.txt": "small", "/lift/b.txt": b} {
		if got := string(h.read(p)); got != want {
			t.Errorf("%s stored as %d bytes, want %d", p, len(got), len(want))
		}
	}

	data := make([]byte, 192<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for i := range 2 {
		part := data[i*len(data)/2 : (i+1)*len(data)/2]
		h.ok("guide_read_file", m{
			"path": "/lift/chunked.bin", "upload_id": "lift", "chunk_index": i, "chunk_count": 2,
			"sha256": sum(data), "encoding": "base64", "content": base64.StdEncoding.EncodeToString(part),
		}, nil)
	}
	if got := h.read("/lift/chunked.bin"); !bytes.Equal(got, data) {
		t.Fatalf("chunked file stored as %d bytes, want %d, differing", len(got), len(data))
	}
}

// Lifting does not change what a long request means: invalid JSON is
// still a parse error, and a tool still sees duplicate arguments.
func TestLiftedRequestsMeanTheSame(t *testing.T) {
	h := newHarnessOver(t, nil, "http")
	url := httptestServer(t, h.srv) + "/mcp"
	session := initializeRaw(t, url)
	rev := h.revision()
	long := strings.Repeat("x", 100<<10)
	call := func(args string) map[string]any {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"guide_cache_file","arguments":` + args + `}}`
		return postRaw(t, url, session, body)
	}

	bad := call(`{"path":"/lift/bad","content":"` + long + `\x"}`)
	if e, _ := bad["error"].(map[string]any); e == nil || e["code"] != float64(-32700) {
		t.Errorf("an invalid escape in a long string: %v, want a -32700 parse error", bad)
	}
	dup := call(`{"path":"/lift/dup","content":"` + long + `","content":"` + long + `"}`)
	res, _ := dup["result"].(map[string]any)
	if res == nil || res["isError"] != true || !strings.Contains(mustJSON(t, res), "given more than once") {
		t.Errorf("a long argument given twice: %.500v, want a tool error naming it", dup)
	}
	if h.revision() != rev {
		t.Error("a refused request changed the store")
	}
	ok := call(`{"path":"/lift/ok","content":"` + long + `"}`)
	if res, _ := ok["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Fatalf("a valid long call: %.500v", ok)
	}
	if got := string(h.read("/lift/ok")); got != long {
		t.Errorf("stored %d bytes, want %d", len(got), len(long))
	}
}

// initializeRaw initializes a session over raw HTTP and returns its id.
func initializeRaw(t *testing.T, url string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %s, session %q", resp.Status, id)
	}
	return id
}

// postRaw posts body in session and returns the decoded JSON-RPC reply.
func postRaw(t *testing.T, url, session, body string) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var reply map[string]any
	if err := json.Unmarshal(raw, &reply); err != nil {
		t.Fatalf("reply %s: %.300s", resp.Status, raw)
	}
	return reply
}
