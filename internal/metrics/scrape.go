package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(sub, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, sub, name), help, labels, nil)
}

var (
	storeFiles        = desc("store", "files", "Files with their content present.")
	storePlaceholders = desc("store", "placeholders", "Files without content (listed, stale or evicted), read on demand.")
	storeDirs         = desc("store", "directories", "Directories, not counting the root.")
	storeStored       = desc("store", "stored_bytes", "Content held, each distinct content once (what counts against --max-store-size).")
	storeLogical      = desc("store", "logical_bytes", "Sum of the sizes of present files, as if nothing were shared.")
	storeBlobs        = desc("store", "blobs", "Distinct contents stored.")
	storeUploads      = desc("store", "uploads_in_progress", "Chunked uploads in progress.")
	storeUploadBytes  = desc("store", "upload_bytes", "Bytes received by chunked uploads in progress.")
	storeEvictions    = desc("store", "evictions_total", "Files made placeholders to make room, since the store was created.")
	storeEvictedBytes = desc("store", "evicted_bytes_total", "Stored bytes freed by eviction, since the store was created.")
	storeExpiries     = desc("store", "expiries_total", "Entries removed because they expired, since the store was created.")
	storeSweptChunks  = desc("store", "swept_chunks_total", "Content chunks deleted because nothing referenced them (left by a crashed host; --store nats), since the store was created.")
	storeHits         = desc("store", "opens_total", "Opens of files, by whether the content was present (hit) or not (miss).", "result")
	storeMaxBytes     = desc("store", "max_bytes", "The configured limit on stored bytes; 0: none.")
	storeVersions     = desc("store", "versions", "Versions of files kept besides the live ones (history and snapshots).")
	storeHeldBytes    = desc("store", "held_bytes", "Stored bytes only kept versions use: at most what deleting every snapshot and history would free.")
	storeSnapshots    = desc("store", "snapshots", "Snapshots.")
	storeUp           = desc("store", "stats_up", "1 when the store's statistics could be read at this scrape.")

	fetchPending   = desc("fetch", "pending_requests", "Requests for content open now.")
	fetchWaiting   = desc("fetch", "waiting_readers", "Programs blocked now on a placeholder's content.")
	fetchRequested = desc("fetch", "requests_total", "Requests for content published to agents.")
	fetchOutcomes  = desc("fetch", "outcomes_total", "How requests and waits ended: fetched, timed_out, abandoned (the reader gave up), withdrawn (no reader left).", "outcome")
)

// storeCollector reads the store's statistics at each scrape.
type storeCollector struct {
	src     func(context.Context) (StoreStats, error)
	timeout time.Duration
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{storeFiles, storePlaceholders, storeDirs, storeStored, storeLogical, storeBlobs,
		storeUploads, storeUploadBytes, storeEvictions, storeEvictedBytes, storeExpiries, storeSweptChunks, storeHits, storeMaxBytes,
		storeVersions, storeHeldBytes, storeSnapshots, storeUp} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	s, err := c.src(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(storeUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(storeUp, prometheus.GaugeValue, 1)
	gauge := func(d *prometheus.Desc, v int64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(storeFiles, s.Files)
	gauge(storePlaceholders, s.Placeholders)
	gauge(storeDirs, s.Dirs)
	gauge(storeStored, s.StoredBytes)
	gauge(storeLogical, s.LogicalBytes)
	gauge(storeBlobs, s.Blobs)
	gauge(storeUploads, s.Uploads)
	gauge(storeUploadBytes, s.UploadBytes)
	gauge(storeMaxBytes, s.MaxStoreBytes)
	gauge(storeVersions, s.Versions)
	gauge(storeHeldBytes, s.HeldBytes)
	gauge(storeSnapshots, s.Snapshots)
	counter(storeEvictions, s.Evictions)
	counter(storeEvictedBytes, s.EvictedBytes)
	counter(storeExpiries, s.Expiries)
	counter(storeSweptChunks, s.SweptChunks)
	counter(storeHits, s.Hits, "hit")
	counter(storeHits, s.Misses, "miss")
}

// fetchCollector reads the fetch broker's counts at each scrape.
type fetchCollector struct{ src func() FetchStats }

func (c *fetchCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{fetchPending, fetchWaiting, fetchRequested, fetchOutcomes} {
		ch <- d
	}
}

func (c *fetchCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src()
	ch <- prometheus.MustNewConstMetric(fetchPending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(fetchWaiting, prometheus.GaugeValue, float64(s.Waiting))
	ch <- prometheus.MustNewConstMetric(fetchRequested, prometheus.CounterValue, float64(s.Requested))
	for outcome, v := range map[string]uint64{"fetched": s.Fetched, "timed_out": s.TimedOut, "abandoned": s.Abandoned, "withdrawn": s.Withdrawn} {
		ch <- prometheus.MustNewConstMetric(fetchOutcomes, prometheus.CounterValue, float64(v), outcome)
	}
}

var (
	blobCacheBlobs   = desc("blob_cache", "blobs", "Blobs in the passthrough blob cache.")
	blobCacheBytes   = desc("blob_cache", "bytes", "Bytes the passthrough blob cache takes on disk.")
	blobCacheMax     = desc("blob_cache", "max_bytes", "The configured bound on the passthrough blob cache (--blob-cache-size).")
	blobCacheStart   = desc("blob_cache", "start_blobs", "Blobs the last run left, at this start: kept (unchanged since sealed) or dropped (deleted).", "result")
	blobCacheHits    = desc("blob_cache", "hits_total", "Opens served from a cached blob without copying it.")
	blobCacheFills   = desc("blob_cache", "fills_total", "Blobs copied into the cache from the store.")
	blobCachePruned  = desc("blob_cache", "pruned_total", "Blobs kept at start and deleted because the store no longer held them.")
	blobCacheMetrics = []*prometheus.Desc{blobCacheBlobs, blobCacheBytes, blobCacheMax, blobCacheStart, blobCacheHits, blobCacheFills, blobCachePruned}
)

// BlobCache are the counts of the mount's passthrough blob cache (the same
// fields as vfs.BlobCacheStats, so that one converts to the other).
type BlobCache struct {
	Blobs         int
	Bytes, Max    int64
	Kept, Dropped int
	Hits, Fills   uint64
	Pruned        uint64
}

// blobCacheCollector reads the blob cache's counts at each scrape.
type blobCacheCollector struct {
	read func() (BlobCache, bool)
}

func (c *blobCacheCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range blobCacheMetrics {
		ch <- d
	}
}

func (c *blobCacheCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.read()
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(blobCacheBlobs, float64(s.Blobs))
	gauge(blobCacheBytes, float64(s.Bytes))
	gauge(blobCacheMax, float64(s.Max))
	gauge(blobCacheStart, float64(s.Kept), "kept")
	gauge(blobCacheStart, float64(s.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(blobCacheHits, prometheus.CounterValue, float64(s.Hits))
	ch <- prometheus.MustNewConstMetric(blobCacheFills, prometheus.CounterValue, float64(s.Fills))
	ch <- prometheus.MustNewConstMetric(blobCachePruned, prometheus.CounterValue, float64(s.Pruned))
}
