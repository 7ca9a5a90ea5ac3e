package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Quota is one configured quota in stored bytes and what its prefix is
// charged (store.QuotaUse's fields, in its order).
type Quota struct {
	Prefix         string
	Limit, Charged int64
}

var (
	quotaCharged = desc("quota", "charged_bytes", "Stored bytes charged to a --quota prefix: files (pinned ones too), versions snapshots hold and uploads in progress below it, each copy whole.", "prefix")
	quotaLimit   = desc("quota", "limit_bytes", "The --quota of a prefix.", "prefix")
)

// quotaCollector exports each quota at each scrape, read within timeout.
// Its label values are the configured prefixes, so they stay as few as
// the operator set.
type quotaCollector struct {
	read    func(context.Context) ([]Quota, error)
	timeout time.Duration
}

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- quotaCharged
	ch <- quotaLimit
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	qs, err := c.read(ctx)
	if err != nil {
		return
	}
	for _, q := range qs {
		ch <- prometheus.MustNewConstMetric(quotaCharged, prometheus.GaugeValue, float64(q.Charged), q.Prefix)
		ch <- prometheus.MustNewConstMetric(quotaLimit, prometheus.GaugeValue, float64(q.Limit), q.Prefix)
	}
}
