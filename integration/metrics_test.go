package integration_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var metricsRE = regexp.MustCompile(`metrics=(http://\S+)/metrics`)

// scrape GETs url with an optional bearer token and parses the reply with
// the Prometheus text parser.
func scrape(t *testing.T, url, bearer string) (int, map[string]*dto.MetricFamily) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return res.StatusCode, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return res.StatusCode, fams
}

// value returns the value of the sample of family name whose labels
// include every pair of labels (name, value, name, value, ...); a
// histogram gives its count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Errorf("no metric %s", name)
		return -1
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.Label {
				found = found || l.GetName() == labels[i] && l.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Errorf("no sample of %s with %v", name, labels)
	return -1
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

// TestMetricsAndHealth: /metrics on the MCP listener needs the same token
// as MCP, on --metrics-listen none; the figures follow calls, refusals,
// content and reads through the mount; /healthz answers 200, then 503
// with a reason and no path once the mount is gone.
func TestMetricsAndHealth(t *testing.T) {
	t.Parallel()
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	tok, _ := issueToken(t, tokens, "agent", "guide:/ok:rw")
	d := startDaemon(t, daemonConfig{transport: overHTTP, client: clientAuth{bearer: tok},
		args: []string{"--tokens", tokens, "--metrics-listen", "127.0.0.1:0"}})
	side := metricsRE.FindStringSubmatch(d.logs.String())
	if side == nil {
		t.Fatalf("no metrics address in the log:\n%s", d.logs)
	}
	base := strings.TrimSuffix(d.url, "/mcp")

	content := strings.Repeat("metrics ", 1000)
	d.mustCall("guide_cache_file", map[string]any{"path": "/ok/a.txt", "content": content})
	if e := d.call("guide_cache_file", map[string]any{"path": "/elsewhere/b.txt", "content": "x"}); e.Success {
		t.Fatal("a write outside the grants succeeded")
	}
	if e := d.call("guide_cache_file", map[string]any{"path": "/ok/c.txt"}); e.Success {
		t.Fatal("a call without content succeeded")
	}
	// A session of a stateful revision (the client above speaks the
	// stateless 2026-07-28).
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, d.url, strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("initialize 2025-06-18: %d, session %q", res.StatusCode, res.Header.Get("Mcp-Session-Id"))
	}
	if got, err := os.ReadFile(d.path("/ok/a.txt")); err != nil || string(got) != content {
		t.Fatalf("read through the mount: %v", err)
	}

	if code, _ := scrape(t, base+"/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics on the MCP listener without a token: %d, want 401", code)
	}
	for _, src := range []struct{ url, bearer string }{{base + "/metrics", tok}, {side[1] + "/metrics", ""}} {
		code, fams := scrape(t, src.url, src.bearer)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", src.url, code)
		}
		for _, c := range []struct {
			name   string
			labels []string
			min    float64
		}{
			{"depotfs_mcp_calls_total", []string{"tool", "guide_cache_file", "outcome", "ok"}, 1},
			{"depotfs_mcp_calls_total", []string{"tool", "guide_cache_file", "outcome", "security"}, 1},
			{"depotfs_mcp_calls_total", []string{"tool", "guide_cache_file", "outcome", "validation"}, 1},
			{"depotfs_mcp_calls_refused_total", []string{"tool", "guide_cache_file", "reason", "denied"}, 1},
			{"depotfs_mcp_call_duration_seconds", []string{"tool", "guide_cache_file"}, 3},
			{"depotfs_mcp_content_bytes_in_total", nil, float64(len(content))},
			{"depotfs_auth_failures_total", []string{"stage", "request"}, 1},
			{"depotfs_store_files", nil, 1},
			{"depotfs_store_stored_bytes", nil, float64(len(content))},
			{"depotfs_store_placeholders", nil, 0},
			{"depotfs_store_evictions_total", nil, 0},
			{"depotfs_store_expiries_total", nil, 0},
			{"depotfs_fetch_requests_total", nil, 0},
			{"depotfs_mcp_sessions_started_total", nil, 1},
			{"depotfs_mcp_sessions_live", nil, 1},
			{"depotfs_mcp_streams_open", []string{"kind", "get"}, 0},
			{"depotfs_fuse_operations_total", []string{"op", "open"}, 1},
			{"depotfs_fuse_operation_duration_seconds", []string{"op", "lookup"}, 1},
		} {
			if v := value(t, fams, c.name, c.labels...); v < c.min {
				t.Errorf("%s: %s%v = %v, want at least %v", src.url, c.name, c.labels, v, c.min)
			}
		}
	}

	// Every metric the shipped Grafana dashboard queries exists (the blob
	// cache's only with passthrough; internal/metrics checks them all).
	dash, err := os.ReadFile("../dist/grafana/depotfs.json")
	if err != nil {
		t.Fatal(err)
	}
	_, fams := scrape(t, side[1]+"/metrics", "")
	passthroughOff := strings.Contains(d.logs.String(), "passthrough off")
	for _, name := range regexp.MustCompile(`depotfs_[a-z_]+`).FindAllString(string(dash), -1) {
		if passthroughOff && strings.HasPrefix(name, "depotfs_blob_cache_") {
			continue
		}
		if _, ok := fams[strings.TrimSuffix(name, "_bucket")]; !ok {
			t.Errorf("the dashboard queries %s, which depotfs does not export", name)
		}
	}

	for _, url := range []string{base + "/healthz", side[1] + "/healthz"} {
		if code, body := get(t, url); code != http.StatusOK || body != "ok\n" {
			t.Errorf("%s while healthy: %d %q", url, code, body)
		}
	}
	// The mount disappears from under depotfs (an operator's umount -l).
	if err := syscall.Unmount(d.mount, syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	code, body := get(t, side[1]+"/healthz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "unhealthy: mount: ") || strings.Contains(body, d.mount) {
		t.Errorf("/healthz without the mount: %d %q, want 503 naming the mount check and no path", code, body)
	}
}
