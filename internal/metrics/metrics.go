package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "depotfs"

// StoreStats are the store's figures as metrics reads them at every
// scrape. They are store.Stats's fields, in its order, so that one converts
// to the other: declared here so that this shared package does not depend
// on the store.
type StoreStats struct {
	Files, Placeholders, Dirs int64
	StoredBytes, LogicalBytes int64
	Blobs                     int64
	Uploads, UploadBytes      int64
	Evictions, EvictedBytes   int64
	Expiries, SweptChunks     int64
	Hits, Misses              int64
	Versions, HeldBytes       int64
	Snapshots                 int64
	DirTimes                  int64
	MaxStoreBytes             int64
	MaxFileBytes              int64
}

// FetchStats are the fetch broker's counts as metrics reads them at every
// scrape: fetch.Stats's fields, in its order, so that one converts to the
// other.
type FetchStats struct {
	Pending, Waiting                                   int
	Requested, Fetched, TimedOut, Abandoned, Withdrawn uint64
}

// Options say where the scrape-time figures come from; a nil source
// leaves its metrics out.
type Options struct {
	Store func(context.Context) (StoreStats, error)
	Fetch func() FetchStats
	// Quotas, when set, reads the quotas in stored bytes at each scrape.
	Quotas func(context.Context) ([]Quota, error)
	// ScrapeTimeout bounds reading the store at a scrape; 0 means 5s.
	ScrapeTimeout time.Duration
	// Tools are the tool names (and other call names, such as
	// resources/read) that Call keeps as label values. A client chooses
	// the name of the tool it calls, so every other name is counted as
	// UnknownTool: the label's values stay as few as the tools served,
	// whatever names clients send. nil keeps every name, for tests.
	Tools []string
}

// Metrics is depotfs's collectors and their registry. Its methods are
// safe for concurrent use.
type Metrics struct {
	reg   *prometheus.Registry
	tools map[string]bool // nil: every name is a label value

	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	refused      *prometheus.CounterVec
	bytesIn      prometheus.Counter
	authFailures *prometheus.CounterVec

	sessionsStarted prometheus.Counter
	sessionsEnded   prometheus.Counter
	streams         *prometheus.GaugeVec

	fuseOps     *prometheus.CounterVec
	fuseSeconds *prometheus.HistogramVec
}

// New registers every collector, with the Go runtime's and the process's,
// in a registry of its own.
func New(o Options) *Metrics {
	if o.ScrapeTimeout <= 0 {
		o.ScrapeTimeout = 5 * time.Second
	}
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts(opts("mcp", "calls_total", "MCP tool calls and resource reads, by tool and outcome (ok, or the envelope's error type).")), []string{"tool", "outcome"}),
		callSeconds: histogram("mcp", "call_duration_seconds", "Time from a call's arrival to its reply, by tool.", "tool",
			.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60),
		refused:         prometheus.NewCounterVec(prometheus.CounterOpts(opts("mcp", "calls_refused_total", "Calls refused before their body ran: denied by grants or policy, or rate limited.")), []string{"tool", "reason"}),
		bytesIn:         prometheus.NewCounter(prometheus.CounterOpts(opts("mcp", "content_bytes_in_total", "Content bytes that calls committed to the store."))),
		authFailures:    prometheus.NewCounterVec(prometheus.CounterOpts(opts("auth", "failures_total", "Refused authentications, by stage (handshake or request).")), []string{"stage"}),
		sessionsStarted: prometheus.NewCounter(prometheus.CounterOpts(opts("mcp", "sessions_started_total", "MCP sessions the HTTP transport started (initialize answered with a session id)."))),
		sessionsEnded:   prometheus.NewCounter(prometheus.CounterOpts(opts("mcp", "sessions_deleted_total", "MCP sessions their client ended with DELETE."))),
		streams:         prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("mcp", "streams_open", "Notification streams open now: a session's GET stream, or a subscriptions/listen request.")), []string{"kind"}),
		fuseOps:         prometheus.NewCounterVec(prometheus.CounterOpts(opts("fuse", "operations_total", "FUSE requests served by the mount, by operation.")), []string{"op"}),
		fuseSeconds: histogram("fuse", "operation_duration_seconds", "Time depotfs took to answer a FUSE request, by operation (a read of a placeholder includes its wait for the content).", "op",
			.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1, 5, 30),
	}
	m.reg.MustRegister(m.calls, m.callSeconds, m.refused, m.bytesIn, m.authFailures,
		m.sessionsStarted, m.sessionsEnded, m.streams, m.fuseOps, m.fuseSeconds,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if o.Store != nil {
		m.reg.MustRegister(storeCollector(o.Store, o.ScrapeTimeout))
	}
	if o.Quotas != nil {
		m.reg.MustRegister(quotaCollector{o.Quotas, o.ScrapeTimeout})
	}
	if o.Fetch != nil {
		m.reg.MustRegister(scraped[FetchStats]{stats: fetchStats, read: func() (FetchStats, bool) { return o.Fetch(), true }})
	}
	for _, k := range []string{StreamGET, StreamListen} {
		m.streams.WithLabelValues(k) // present at 0 from the start
	}
	if o.Tools != nil {
		m.tools = make(map[string]bool, len(o.Tools))
		for _, t := range o.Tools {
			m.tools[t] = true
		}
	}
	return m
}

// opts names a metric of depotfs in subsystem sub.
func opts(sub, name, help string) prometheus.Opts {
	return prometheus.Opts{Namespace: namespace, Subsystem: sub, Name: name, Help: help}
}

// histogram is a histogram of depotfs in subsystem sub, by label.
func histogram(sub, name, help, label string, buckets ...float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Subsystem: sub, Name: name, Help: help, Buckets: buckets}, []string{label})
}

// Handler serves the registry in the Prometheus text format (or
// OpenMetrics, when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

// Registry returns the registry, for a test or another exporter.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Outcome of a call that succeeded; a failed call's outcome is its
// envelope error type (validation, security, not_found, ...).
const OutcomeOK = "ok"

// Reasons a call is refused.
const (
	RefusedDenied      = "denied"
	RefusedRateLimited = "rate_limited"
)

// UnknownTool is the tool label of calls of a name not in Options.Tools.
const UnknownTool = "unknown"

// Call records one finished call: its tool, outcome, duration, why it was
// refused ("" if it was not) and the content bytes it committed. A tool
// not in Options.Tools is counted as UnknownTool.
func (m *Metrics) Call(tool, outcome, refused string, d time.Duration, bytesIn int64) {
	if m.tools != nil && !m.tools[tool] {
		tool = UnknownTool
	}
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.callSeconds.WithLabelValues(tool).Observe(d.Seconds())
	if refused != "" {
		m.refused.WithLabelValues(tool, refused).Inc()
	}
	if bytesIn > 0 {
		m.bytesIn.Add(float64(bytesIn))
	}
}

// AuthFailure records a refused authentication at stage.
func (m *Metrics) AuthFailure(stage string) { m.authFailures.WithLabelValues(stage).Inc() }

// Kinds of notification stream.
const (
	StreamGET    = "get"
	StreamListen = "listen"
)

// StreamOpened counts a notification stream of kind as open until the
// returned function is called.
func (m *Metrics) StreamOpened(kind string) (closed func()) {
	g := m.streams.WithLabelValues(kind)
	g.Inc()
	return g.Dec
}

// SessionStarted records a new MCP session.
func (m *Metrics) SessionStarted() { m.sessionsStarted.Inc() }

// SessionDeleted records a session its client ended.
func (m *Metrics) SessionDeleted() { m.sessionsEnded.Inc() }

// ObserveOp records one FUSE operation; it implements vfs.OpObserver.
func (m *Metrics) ObserveOp(op string, d time.Duration) {
	m.fuseOps.WithLabelValues(op).Inc()
	m.fuseSeconds.WithLabelValues(op).Observe(d.Seconds())
}

// SessionSource counts the MCP sessions open now; *mcpserver.Server
// implements it.
type SessionSource interface {
	LiveSessions() int
}

// WatchBlobCache exports the mount's passthrough blob cache counts
// (depotfs_blob_cache_*), calling read at each scrape; while read says
// false (passthrough off) they are left out. Call it once, when the mount
// exists.
func (m *Metrics) WatchBlobCache(read func() (BlobCache, bool)) {
	m.reg.MustRegister(scraped[BlobCache]{stats: blobCacheStats, read: read})
}

// WatchTampered exports read's count as
// depotfs_store_tampered_chunks_total: reads of sealed content that failed
// authentication (a damaged or altered chunk; each is an I/O error to its
// reader, never bytes). Call it once, for a store that seals content.
func (m *Metrics) WatchTampered(read func() uint64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts(opts("store", "tampered_chunks_total", "Reads of sealed content that failed authentication (a damaged or altered chunk, never served), since the server started.")), func() float64 { return float64(read()) }))
}

// WatchSessions exports src's count as depotfs_mcp_sessions_live, read
// at each scrape. Call it once, when the server exists.
func (m *Metrics) WatchSessions(src SessionSource) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts(opts("mcp", "sessions_live", "MCP sessions open now (revisions with sessions; 2026-07-28 has none).")), func() float64 { return float64(src.LiveSessions()) }))
}
