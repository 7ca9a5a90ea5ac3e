package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func desc(sub, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, sub, name), help, labels, nil)
}

// stat is one figure of S a collector exports at each scrape.
type stat[S any] struct {
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	value  func(S) float64
	labels []string // the values of the desc's labels
}

func gauge[S any, N int | int64 | uint64](d *prometheus.Desc, v func(S) N, labels ...string) stat[S] {
	return stat[S]{d, prometheus.GaugeValue, func(s S) float64 { return float64(v(s)) }, labels}
}

func counter[S any, N int | int64 | uint64](d *prometheus.Desc, v func(S) N, labels ...string) stat[S] {
	return stat[S]{d, prometheus.CounterValue, func(s S) float64 { return float64(v(s)) }, labels}
}

// scraped exports stats of the S that read returns at each scrape; read
// returning false leaves them all out. up, if set, is a gauge of 1 when
// read succeeded and 0 when it did not.
type scraped[S any] struct {
	stats []stat[S]
	read  func() (S, bool)
	up    *prometheus.Desc
}

func (c scraped[S]) Describe(ch chan<- *prometheus.Desc) {
	if c.up != nil {
		ch <- c.up
	}
	for i, s := range c.stats {
		if i == 0 || s.desc != c.stats[i-1].desc {
			ch <- s.desc
		}
	}
}

func (c scraped[S]) Collect(ch chan<- prometheus.Metric) {
	v, ok := c.read()
	if c.up != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, map[bool]float64{true: 1}[ok])
	}
	if !ok {
		return
	}
	for _, s := range c.stats {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(v), s.labels...)
	}
}

var (
	storeHits     = desc("store", "opens_total", "Opens of files, by whether the content was present (hit) or not (miss).", "result")
	fetchOutcomes = desc("fetch", "outcomes_total", "How requests and waits ended: fetched, timed_out, abandoned (the reader gave up), withdrawn (no reader left).", "outcome")
	blobStart     = desc("blob_cache", "start_blobs", "Blobs the last run left, at this start: kept (unchanged since sealed) or dropped (deleted).", "result")
)

var storeStats = []stat[StoreStats]{
	gauge(desc("store", "files", "Files with their content present."), func(s StoreStats) int64 { return s.Files }),
	gauge(desc("store", "placeholders", "Files without content (listed, stale or evicted), read on demand."), func(s StoreStats) int64 { return s.Placeholders }),
	gauge(desc("store", "directories", "Directories, not counting the root."), func(s StoreStats) int64 { return s.Dirs }),
	gauge(desc("store", "stored_bytes", "Content held, each distinct content once (what counts against --max-store-size)."), func(s StoreStats) int64 { return s.StoredBytes }),
	gauge(desc("store", "logical_bytes", "Sum of the sizes of present files, as if nothing were shared."), func(s StoreStats) int64 { return s.LogicalBytes }),
	gauge(desc("store", "blobs", "Distinct contents stored."), func(s StoreStats) int64 { return s.Blobs }),
	gauge(desc("store", "uploads_in_progress", "Chunked uploads in progress."), func(s StoreStats) int64 { return s.Uploads }),
	gauge(desc("store", "upload_bytes", "Bytes received by chunked uploads in progress."), func(s StoreStats) int64 { return s.UploadBytes }),
	gauge(desc("store", "max_bytes", "The configured limit on stored bytes; 0: none."), func(s StoreStats) int64 { return s.MaxStoreBytes }),
	gauge(desc("store", "versions", "Versions of files kept besides the live ones (history and snapshots)."), func(s StoreStats) int64 { return s.Versions }),
	gauge(desc("store", "held_bytes", "Stored bytes only kept versions use: at most what deleting every snapshot and history would free."), func(s StoreStats) int64 { return s.HeldBytes }),
	gauge(desc("store", "snapshots", "Snapshots."), func(s StoreStats) int64 { return s.Snapshots }),
	counter(desc("store", "evictions_total", "Files made placeholders to make room, since the store was created."), func(s StoreStats) int64 { return s.Evictions }),
	counter(desc("store", "evicted_bytes_total", "Stored bytes freed by eviction, since the store was created."), func(s StoreStats) int64 { return s.EvictedBytes }),
	counter(desc("store", "expiries_total", "Entries removed because they expired, since the store was created."), func(s StoreStats) int64 { return s.Expiries }),
	counter(desc("store", "swept_chunks_total", "Content chunks deleted because nothing referenced them (left by a crashed host; --store nats), since the store was created."), func(s StoreStats) int64 { return s.SweptChunks }),
	counter(storeHits, func(s StoreStats) int64 { return s.Hits }, "hit"),
	counter(storeHits, func(s StoreStats) int64 { return s.Misses }, "miss"),
}

// storeCollector reads the store's statistics at each scrape, within
// timeout.
func storeCollector(src func(context.Context) (StoreStats, error), timeout time.Duration) prometheus.Collector {
	return scraped[StoreStats]{storeStats, func() (StoreStats, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		s, err := src(ctx)
		return s, err == nil
	}, desc("store", "stats_up", "1 when the store's statistics could be read at this scrape.")}
}

// fetchStats are the fetch broker's counts.
var fetchStats = []stat[FetchStats]{
	gauge(desc("fetch", "pending_requests", "Requests for content open now."), func(s FetchStats) int { return s.Pending }),
	gauge(desc("fetch", "waiting_readers", "Programs blocked now on a placeholder's content."), func(s FetchStats) int { return s.Waiting }),
	counter(desc("fetch", "requests_total", "Requests for content published to agents."), func(s FetchStats) uint64 { return s.Requested }),
	counter(fetchOutcomes, func(s FetchStats) uint64 { return s.Fetched }, "fetched"),
	counter(fetchOutcomes, func(s FetchStats) uint64 { return s.TimedOut }, "timed_out"),
	counter(fetchOutcomes, func(s FetchStats) uint64 { return s.Abandoned }, "abandoned"),
	counter(fetchOutcomes, func(s FetchStats) uint64 { return s.Withdrawn }, "withdrawn"),
}

// BlobCache are the counts of the mount's passthrough blob cache (the same
// fields as vfs.BlobCacheStats, so that one converts to the other).
type BlobCache struct {
	Blobs         int
	Bytes, Max    int64
	Kept, Dropped int
	Hits, Fills   uint64
	Pruned        uint64
}

// blobCacheStats are the blob cache's counts.
var blobCacheStats = []stat[BlobCache]{
	gauge(desc("blob_cache", "blobs", "Blobs in the passthrough blob cache."), func(s BlobCache) int { return s.Blobs }),
	gauge(desc("blob_cache", "bytes", "Bytes the passthrough blob cache takes on disk."), func(s BlobCache) int64 { return s.Bytes }),
	gauge(desc("blob_cache", "max_bytes", "The configured bound on the passthrough blob cache (--blob-cache-size)."), func(s BlobCache) int64 { return s.Max }),
	gauge(blobStart, func(s BlobCache) int { return s.Kept }, "kept"),
	gauge(blobStart, func(s BlobCache) int { return s.Dropped }, "dropped"),
	counter(desc("blob_cache", "hits_total", "Opens served from a cached blob without copying it."), func(s BlobCache) uint64 { return s.Hits }),
	counter(desc("blob_cache", "fills_total", "Blobs copied into the cache from the store."), func(s BlobCache) uint64 { return s.Fills }),
	counter(desc("blob_cache", "pruned_total", "Blobs kept at start and deleted because the store no longer held them."), func(s BlobCache) uint64 { return s.Pruned }),
}
