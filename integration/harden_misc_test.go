package integration_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestCancelledCallAudited: a call whose client goes
// away (here a long poll of guide_pending_requests) is audited as
// cancelled, not as a normal completion.
func TestCancelledCallAudited(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	rc := newRawClient(t, d.url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.url, strings.NewReader(
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"guide_pending_requests","arguments":{"wait_seconds":30}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", rc.session)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("the long poll answered %d before the client went away", resp.StatusCode)
	}
	var line string
	waitFor(t, 40*time.Second, "the audit record of the cancelled poll", func() bool {
		b, _ := os.ReadFile(d.auditLog())
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"tool":"guide_pending_requests"`) {
				line = l
				return true
			}
		}
		return false
	})
	if !strings.Contains(line, `"cancelled":true`) {
		t.Fatalf("the abandoned long poll is audited as a normal completion: %s", line)
	}
}

// TestNoSpliceNoise: reading files
// through the mount logs nothing per read at INFO.
func TestNoSpliceNoise(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--log-level", "info"}})
	data := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	for i := range 4 {
		d.mustCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/s/%d.txt", i), "content": data})
	}
	for range 3 {
		for i := range 4 {
			if b, err := os.ReadFile(d.path(fmt.Sprintf("/s/%d.txt", i))); err != nil || len(b) != len(data) {
				t.Fatalf("read /s/%d.txt: %d bytes, %v", i, len(b), err)
			}
		}
	}
	if n := strings.Count(d.logs.String(), "trySplice"); n > 0 {
		t.Errorf("%d trySplice lines at INFO for 12 reads", n)
	}
}
