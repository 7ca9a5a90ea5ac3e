package metrics_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/depotfs/depotfs/internal/metrics"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
)

type sessions int

func (s sessions) LiveSessions() int { return int(s) }

// dashboard is the part of dist/grafana/depotfs.json the test reads.
type dashboard struct {
	Templating struct {
		List []struct {
			Query any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Title   string `json:"title"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var metricName = regexp.MustCompile(`depotfs_[a-z0-9_]+`)

// TestDashboardQueriesExportedMetrics: every metric the shipped Grafana
// dashboard queries is one depotfs exports, whatever the host (the
// integration test scrapes a real server, where some families, such as
// the blob cache's without passthrough, are absent), and the panels have
// distinct ids, refIds within a panel, and places on the grid.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("../../dist/grafana/depotfs.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dist/grafana/depotfs.json: %v", err)
	}

	// Every source present and every family observed once, so that each
	// one the registry can export is in the gathering.
	m := metrics.New(metrics.Options{Store: storeStats(store.Stats{}, nil), Fetch: fetchStats(fetch.Stats{})})
	m.WatchBlobCache(func() (metrics.BlobCache, bool) { return metrics.BlobCache{}, true })
	m.WatchSessions(sessions(0))
	m.Call("t", "security", metrics.RefusedDenied, time.Millisecond, 1)
	m.AuthFailure("request")
	m.SessionStarted()
	m.SessionDeleted()
	m.ObserveOp("read", time.Microsecond)
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]dto.MetricType{}
	for _, f := range fams {
		exported[f.GetName()] = f.GetType()
	}

	var queries []string
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok {
			queries = append(queries, q)
		}
	}
	ids := map[int]string{}
	for _, p := range d.Panels {
		if other, ok := ids[p.ID]; ok {
			t.Errorf("panels %q and %q share id %d", other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if len(p.Targets) == 0 {
			t.Errorf("panel %q queries nothing", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if refs[q.RefID] {
				t.Errorf("panel %q: refId %q twice", p.Title, q.RefID)
			}
			refs[q.RefID] = true
			queries = append(queries, q.Expr)
		}
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is off the 24-column grid", p.Title, g)
		}
	}
	for i, p := range d.Panels {
		for _, q := range d.Panels[i+1:] {
			a, b := p.GridPos, q.GridPos
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("panels %q and %q overlap", p.Title, q.Title)
			}
		}
	}

	seen := map[string]bool{}
	for _, q := range queries {
		for _, name := range metricName.FindAllString(q, -1) {
			seen[name] = true
			if exportedAs(exported, name) {
				continue
			}
			t.Errorf("the dashboard queries %s, which depotfs does not export (a family that appears only once observed must be observed above)", name)
		}
	}
	for _, name := range []string{"depotfs_store_swept_chunks_total", "depotfs_blob_cache_hits_total", "depotfs_blob_cache_bytes"} {
		if !seen[name] {
			t.Errorf("the dashboard has no panel for %s", name)
		}
	}
}

// exportedAs reports whether name is an exported family, or a series of
// an exported histogram (_bucket, _sum, _count).
func exportedAs(exported map[string]dto.MetricType, name string) bool {
	if _, ok := exported[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && exported[base] == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}
