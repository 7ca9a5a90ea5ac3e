package integration_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestUnknownToolNamesBounded: tool names are chosen by the client, so
// 5,000 calls of made-up names must not become 5,000 label values of
// /metrics: they are counted under tool="unknown", and /metrics stays
// small.
func TestUnknownToolNamesBounded(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	base := strings.TrimSuffix(d.url, "/mcp")
	const names, workers = 5000, 8
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
	if v := value(t, fams, "depotfs_mcp_calls_total", "tool", "unknown"); v < names {
		t.Errorf(`depotfs_mcp_calls_total{tool="unknown"} = %v, want at least %d`, v, names)
	}
}
