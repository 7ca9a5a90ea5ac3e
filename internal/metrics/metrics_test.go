package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/depotfs/depotfs/internal/metrics"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
)

// storeStats reads s (converted as cmd/depotfs converts the store's own
// figures, so a field added to store.Stats alone fails to compile here) or
// fails with err.
func storeStats(s store.Stats, err error) func(context.Context) (metrics.StoreStats, error) {
	return func(context.Context) (metrics.StoreStats, error) { return metrics.StoreStats(s), err }
}

// fetchStats reads s, converted as cmd/depotfs converts the broker's.
func fetchStats(s fetch.Stats) func() metrics.FetchStats {
	return func() metrics.FetchStats { return metrics.FetchStats(s) }
}

func TestMetrics(t *testing.T) {
	m := metrics.New(metrics.Options{
		Store: storeStats(store.Stats{Files: 3, Placeholders: 1, StoredBytes: 42, Evictions: 2, SweptChunks: 7, Hits: 5, Misses: 1, HeldBytes: 9}, nil),
		Fetch: fetchStats(fetch.Stats{Pending: 1, Requested: 4, Fetched: 3}),
	})
	m.Call("guide_cache_file", metrics.OutcomeOK, "", 3*time.Millisecond, 100)
	m.Call("guide_cache_file", "security", metrics.RefusedDenied, time.Millisecond, 0)
	m.ObserveOp("read", 20*time.Microsecond)
	done := m.StreamOpened(metrics.StreamListen)

	expected := `
# HELP depotfs_mcp_calls_total MCP tool calls and resource reads, by tool and outcome (ok, or the envelope's error type).
# TYPE depotfs_mcp_calls_total counter
depotfs_mcp_calls_total{outcome="ok",tool="guide_cache_file"} 1
depotfs_mcp_calls_total{outcome="security",tool="guide_cache_file"} 1
# HELP depotfs_mcp_content_bytes_in_total Content bytes that calls committed to the store.
# TYPE depotfs_mcp_content_bytes_in_total counter
depotfs_mcp_content_bytes_in_total 100
# HELP depotfs_store_files Files with their content present.
# TYPE depotfs_store_files gauge
depotfs_store_files 3
# HELP depotfs_store_held_bytes Stored bytes only kept versions use: at most what deleting every snapshot and history would free.
# TYPE depotfs_store_held_bytes gauge
depotfs_store_held_bytes 9
# HELP depotfs_store_swept_chunks_total Content chunks deleted because nothing referenced them (left by a crashed host; --store nats), since the store was created.
# TYPE depotfs_store_swept_chunks_total counter
depotfs_store_swept_chunks_total 7
# HELP depotfs_fetch_requests_total Requests for content published to agents.
# TYPE depotfs_fetch_requests_total counter
depotfs_fetch_requests_total 4
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected),
		"depotfs_mcp_calls_total", "depotfs_mcp_content_bytes_in_total", "depotfs_store_files", "depotfs_store_held_bytes", "depotfs_store_swept_chunks_total", "depotfs_fetch_requests_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "depotfs_fuse_operation_duration_seconds"); err != nil || n != 1 {
		t.Errorf("FUSE histogram series: %d, %v", n, err)
	}
	done()
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP depotfs_mcp_streams_open Notification streams open now: a session's GET stream, or a subscriptions/listen request.
# TYPE depotfs_mcp_streams_open gauge
depotfs_mcp_streams_open{kind="get"} 0
depotfs_mcp_streams_open{kind="listen"} 0
`), "depotfs_mcp_streams_open"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}

	failing := metrics.New(metrics.Options{Store: storeStats(store.Stats{}, errors.New("closed"))})
	if err := testutil.GatherAndCompare(failing.Registry(), strings.NewReader(`
# HELP depotfs_store_stats_up 1 when the store's statistics could be read at this scrape.
# TYPE depotfs_store_stats_up gauge
depotfs_store_stats_up 0
`), "depotfs_store_stats_up", "depotfs_store_files"); err != nil {
		t.Error(err)
	}
}

// TestUnknownToolLabel: a tool name outside Options.Tools is counted as
// UnknownTool, so names clients make up add no label values.
func TestUnknownToolLabel(t *testing.T) {
	m := metrics.New(metrics.Options{Tools: []string{"guide_cache_file"}})
	m.Call("guide_cache_file", metrics.OutcomeOK, "", time.Millisecond, 0)
	for i := range 100 {
		m.Call("made_up_"+strings.Repeat("x", i), "security", metrics.RefusedDenied, time.Millisecond, 0)
	}
	if n := testutil.CollectAndCount(m.Registry(), "depotfs_mcp_calls_total"); n != 2 {
		t.Errorf("%d series of depotfs_mcp_calls_total, want 2 (the tool and %q)", n, metrics.UnknownTool)
	}
}

// TestQuotaMetrics: one series per configured prefix, what it is charged
// and its limit; a failed read exports none.
func TestQuotaMetrics(t *testing.T) {
	var fail bool
	m := metrics.New(metrics.Options{Quotas: func(context.Context) ([]metrics.Quota, error) {
		if fail {
			return nil, context.DeadlineExceeded
		}
		return []metrics.Quota{{Prefix: "/a", Limit: 100, Charged: 42}, {Prefix: "/b", Limit: 7, Charged: 0}}, nil
	}})
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP depotfs_quota_charged_bytes Stored bytes charged to a --quota prefix: files (pinned ones too), versions snapshots hold and uploads in progress below it, each copy whole.
# TYPE depotfs_quota_charged_bytes gauge
depotfs_quota_charged_bytes{prefix="/a"} 42
depotfs_quota_charged_bytes{prefix="/b"} 0
# HELP depotfs_quota_limit_bytes The --quota of a prefix.
# TYPE depotfs_quota_limit_bytes gauge
depotfs_quota_limit_bytes{prefix="/a"} 100
depotfs_quota_limit_bytes{prefix="/b"} 7
`), "depotfs_quota_charged_bytes", "depotfs_quota_limit_bytes"); err != nil {
		t.Error(err)
	}
	fail = true
	if n, err := testutil.GatherAndCount(m.Registry(), "depotfs_quota_charged_bytes"); err != nil || n != 0 {
		t.Errorf("a failed read exports %d series (%v), want none", n, err)
	}
}
