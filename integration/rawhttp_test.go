package integration_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawClient speaks MCP over HTTP by hand, for requests no well-behaved
// client sends: huge names, oversized or stalled bodies, batches.
type rawClient struct {
	t       testing.TB
	url     string
	session string
	hc      *http.Client
}

// newRawClient opens an MCP session on the daemon's endpoint.
func newRawClient(t testing.TB, url string) *rawClient {
	t.Helper()
	return newRawClientWith(t, url, &http.Client{Timeout: 2 * time.Minute})
}

// newRawClientWith is newRawClient over hc (a transport adding a token,
// say).
func newRawClientWith(t testing.TB, url string, hc *http.Client) *rawClient {
	t.Helper()
	c := &rawClient{t: t, url: url, hc: hc}
	status, body, hdr := c.post([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	if status != http.StatusOK {
		t.Fatalf("initialize: status %d: %s", status, body)
	}
	c.session = hdr.Get("Mcp-Session-Id")
	if st, b, _ := c.post([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); st/100 != 2 {
		t.Fatalf("initialized: status %d: %s", st, b)
	}
	return c
}

// post sends one request body and returns the status, the JSON-RPC
// message (unwrapped from an SSE event if the server streamed it) and the
// headers.
func (c *rawClient) post(body []byte) (int, []byte, http.Header) {
	c.t.Helper()
	return c.postReader(bytes.NewReader(body), int64(len(body)))
}

func (c *rawClient) postReader(body io.Reader, length int64) (int, []byte, http.Header) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.url, body)
	if err != nil {
		c.t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", c.url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read reply: %v", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		for _, l := range strings.Split(string(b), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				b = []byte(d)
			}
		}
	}
	return resp.StatusCode, b, resp.Header
}

// call sends a tools/call with raw JSON arguments and returns the status
// and the JSON-RPC reply.
func (c *rawClient) call(id int, tool string, args string) (int, rpcReply) {
	c.t.Helper()
	name, _ := json.Marshal(tool)
	st, b, _ := c.post(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, id, name, args))
	var r rpcReply
	if len(b) > 0 {
		if err := json.Unmarshal(b, &r); err != nil {
			c.t.Fatalf("reply %.300q: %v", b, err)
		}
	}
	r.raw = b
	return st, r
}

// rpcReply is a JSON-RPC reply as the raw client sees it.
type rpcReply struct {
	Result *struct {
		IsError           bool     `json:"isError"`
		StructuredContent envelope `json:"structuredContent"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}
