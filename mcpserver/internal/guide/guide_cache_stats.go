package guide

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

const toolCacheStats = "guide_cache_stats"

// CacheStats is the reply data of guide_cache_stats: the whole depot at one
// moment. It is exported so that clients such as "depotfs status" can
// decode the reply into it. A plain value.
type CacheStats struct {
	Store    StoreStats `json:"store"`
	Fetch    FetchStats `json:"fetch"`
	Limits   Limits     `json:"limits"`
	Caller   Caller     `json:"caller"`
	Revision uint64     `json:"revision"`
}

// Caller is what the calling identity holds of each limit kept per
// identity.
type Caller struct {
	Identity string `json:"identity"`
	// Tenant is what the caller's limits count against: every credential
	// with the same grant prefixes, or the tenant its token names.
	Tenant string       `json:"tenant"`
	Limits []tool.Quota `json:"limits"`
}

// StoreStats are the store's counts and cumulative counters (see
// store.Stats).
type StoreStats struct {
	Files           int64 `json:"files"`
	Placeholders    int64 `json:"placeholders"`
	Directories     int64 `json:"directories"`
	StoredBytes     int64 `json:"stored_bytes"`
	LogicalBytes    int64 `json:"logical_bytes"`
	DedupSavedBytes int64 `json:"dedup_saved_bytes"`
	Blobs           int64 `json:"blobs"`
	Uploads         int64 `json:"uploads"`
	UploadBytes     int64 `json:"upload_bytes"`
	ReceivingBytes  int64 `json:"receiving_bytes"`
	Evictions       int64 `json:"evictions"`
	EvictedBytes    int64 `json:"evicted_bytes"`
	Expiries        int64 `json:"expiries"`
	SweptChunks     int64 `json:"swept_chunks"`
	Hits            int64 `json:"hits"`
	Misses          int64 `json:"misses"`
	Versions        int64 `json:"versions"`
	HeldBytes       int64 `json:"held_bytes"`
	Snapshots       int64 `json:"snapshots"`
}

// FetchStats are the fetch broker's counters (see fetch.Stats); Enabled is
// false when depotfs runs without a mount, so nothing can be requested.
type FetchStats struct {
	Enabled   bool   `json:"enabled"`
	Pending   int    `json:"pending"`
	Waiting   int    `json:"waiting"`
	Requested uint64 `json:"requested"`
	Fetched   uint64 `json:"fetched"`
	TimedOut  uint64 `json:"timed_out"`
	Abandoned uint64 `json:"abandoned"`
	Withdrawn uint64 `json:"withdrawn"`
}

// Limits are the configured limits; 0 means none (for UploadTTLSeconds:
// uploads never expire).
type Limits struct {
	MaxStoreBytes       int64   `json:"max_store_bytes"`
	MaxFileBytes        int64   `json:"max_file_bytes"`
	MaxContentBytes     int64   `json:"max_content_bytes"`
	MaxChunks           int     `json:"max_chunks"`
	MaxBatchFiles       int     `json:"max_batch_files"`
	MaxBatchBytes       int64   `json:"max_batch_bytes"`
	FetchTimeoutSeconds float64 `json:"fetch_timeout_seconds"`
	UploadTTLSeconds    float64 `json:"upload_ttl_seconds"`
	KeepVersions        int     `json:"keep_versions"`
}

// cacheStats reports the store's statistics, the broker's and the limits.
func (s *tools) cacheStats(ctx context.Context, c *tool.Call, raw json.RawMessage) (tool.Reply, error) {
	if err := args.Fill(raw, c.OwnArgs(), &struct{}{}); err != nil { // it takes none
		return tool.Reply{}, err
	}
	st, err := c.Store().Stats(ctx)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "stats", Path: "/", Err: err}
	}
	rev, err := c.Store().Revision(ctx)
	if err != nil {
		return tool.Reply{}, &tool.StoreError{Op: "revision", Path: "/", Err: err}
	}
	d := &CacheStats{
		Store: StoreStats{
			Files: st.Files, Placeholders: st.Placeholders, Directories: st.Dirs,
			StoredBytes: st.StoredBytes, LogicalBytes: st.LogicalBytes, DedupSavedBytes: st.DedupSavedBytes(),
			Blobs: st.Blobs, Uploads: st.Uploads, UploadBytes: st.UploadBytes, ReceivingBytes: c.Store().Receiving(),
			Evictions: st.Evictions, EvictedBytes: st.EvictedBytes, Expiries: st.Expiries, SweptChunks: st.SweptChunks,
			Hits: st.Hits, Misses: st.Misses, Versions: st.Versions, HeldBytes: st.HeldBytes, Snapshots: st.Snapshots,
		},
		Limits: Limits{
			MaxStoreBytes: st.MaxStoreBytes, MaxFileBytes: st.MaxFileBytes,
			MaxContentBytes: s.opts.MaxContentBytes, MaxChunks: s.opts.MaxChunks,
			MaxBatchFiles: s.opts.MaxBatchFiles, MaxBatchBytes: s.opts.MaxBatchBytes,
			KeepVersions: s.opts.KeepVersions, UploadTTLSeconds: max(s.opts.UploadTTL.Seconds(), 0),
		},
		Caller:   Caller{Identity: c.Who().String(), Tenant: c.Tenant(), Limits: s.quotas(ctx, c)},
		Revision: rev,
	}
	if r := s.pending.Broker(); r != nil {
		fs := r.Stats()
		d.Fetch = FetchStats{
			Enabled: true, Pending: fs.Pending, Waiting: fs.Waiting, Requested: fs.Requested,
			Fetched: fs.Fetched, TimedOut: fs.TimedOut, Abandoned: fs.Abandoned, Withdrawn: fs.Withdrawn,
		}
		d.Limits.FetchTimeoutSeconds = r.Timeout().Seconds()
	}
	c.Status = "reported"
	msg := fmt.Sprintf("The depot holds %d files (%d bytes stored, %d saved by deduplication) and %d placeholders; %d evictions and %d expiries so far; %d file request(s) pending.",
		st.Files, st.StoredBytes, st.DedupSavedBytes(), st.Placeholders, st.Evictions, st.Expiries, d.Fetch.Pending)
	return tool.Reply{Data: d, Message: msg, Stats: map[string]any{"revision": rev}}, nil
}

// quotas returns the limits of c's tenant and what it holds of each,
// and the quotas in stored bytes of the prefixes it reads or writes.
func (s *tools) quotas(ctx context.Context, c *tool.Call) []tool.Quota {
	out := []tool.Quota{}
	if s.opts.Quotas != nil {
		out = append(out, s.opts.Quotas(c.Tenant())...)
	}
	out = append(out, tool.Quota{Name: "raw_uploads", Flag: "--max-raw-uploads-per-identity",
		Held: int64(s.uploads.Held(c.Tenant())), Limit: int64(s.opts.MaxRawUploadsPerIdentity)})
	if held, err := c.Store().SnapshotsHeld(ctx); err == nil {
		out = append(out, tool.Quota{Name: "snapshots", Flag: "--max-snapshots-per-identity", Held: int64(held), Limit: int64(s.opts.MaxSnapshotsPerIdentity)})
	}
	if held, limit, err := c.Store().UploadBytes(ctx); err == nil {
		out = append(out, tool.Quota{Name: "upload_bytes", Flag: "--max-upload-bytes-per-identity", Held: held, Limit: limit})
	}
	if qs, err := c.Store().StoredQuotas(ctx); err == nil {
		out = append(out, qs...)
	}
	return out
}
