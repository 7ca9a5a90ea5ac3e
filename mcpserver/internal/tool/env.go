package tool

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Env is what tool bodies know of the server besides the store: its limits,
// where the depot is mounted, and the hook that waits for the mount. The
// server fills it once, from its Options with defaults applied, before any
// tool is built; it is read-only afterwards and safe to share.
type Env struct {
	// MountPoint is the absolute host directory where the depot is mounted;
	// "" when it is not.
	MountPoint string
	// Uploads is the clean depot directory of filename-only uploads.
	Uploads string
	// MaxContentBytes limits the decoded content of one call.
	MaxContentBytes int64
	// MaxFileBytes is the largest file accepted at the edge; 0: no check.
	MaxFileBytes int64
	// MaxReadBytes limits what one read of the provider and fs profiles
	// returns.
	MaxReadBytes int64
	// MaxChunks limits chunk_count of a chunked upload.
	MaxChunks int
	// MaxListEntries limits the entries of one listing.
	MaxListEntries int
	// MaxBatchFiles and MaxBatchBytes limit one guide_cache_files call: its
	// entries, and their decoded content in all.
	MaxBatchFiles int
	MaxBatchBytes int64
	// UploadURLTTL is how long an upload_url of guide_begin_upload works.
	UploadURLTTL time.Duration
	// MaxRawUploadsPerIdentity bounds the raw uploads one identity has
	// begun and not sent.
	MaxRawUploadsPerIdentity int
	// MaxUploadBytesPerIdentity bounds what one identity's chunked
	// uploads in progress hold; 0: a quarter of the store's size limit
	// (see UploadBytesLimit).
	MaxUploadBytesPerIdentity int64
	// UploadTTL is how long a filename-only upload is kept by default;
	// negative: never expires.
	UploadTTL time.Duration
	// RateLocal applies the rate limits to callers without a credential
	// (stdio, loopback HTTP when no authentication is configured); by
	// default only authenticated identities are limited.
	RateLocal bool
	// CommitTimeout bounds the write phase of a validated call.
	CommitTimeout time.Duration
	// Applied, when set, waits until the mount shows a store revision.
	Applied func(ctx context.Context, rev uint64) error
	// DiskFree, when set, returns the bytes free on the disk holding the
	// database and the audit log; a write that would leave less than
	// DiskReserve is refused with ErrorDiskFull.
	DiskFree    func() (int64, error)
	DiskReserve int64
	// SpoolDir is the directory of the temporary files an archive upload
	// is spooled to; "" is os.TempDir().
	SpoolDir string
	// Quotas, when set, returns the per-identity limits kept outside the
	// tools (sessions) and what the identity of key (see Key) holds of
	// each.
	Quotas func(key string) []Quota
	// Log receives tool bodies' warnings.
	Log *slog.Logger
	// Now is the clock of rate limits and call times.
	Now func() time.Time
}

// CommitContext returns the context for the write phase of a validated
// call. It keeps ctx's values but not its cancellation: once a call starts
// writing, it finishes even if the client goes away or the transport shuts
// down, bounded by CommitTimeout, so a shutdown never cuts a call between
// its commit and its reply.
func (e *Env) CommitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), e.CommitTimeout)
}

// WaitApplied waits until the mount shows revision rev, when Applied is
// set. A failure does not undo the committed write; it becomes a warning.
func (e *Env) WaitApplied(ctx context.Context, c *Call, rev uint64) []string {
	if e.Applied == nil {
		return nil
	}
	if err := e.Applied(ctx, rev); err != nil {
		e.Log.Warn("mcp write not yet visible in the mount", "tool", c.Name(), "path", c.Path, "revision", rev, "err", err)
		return []string{fmt.Sprintf("The change is stored (revision %d), but the mount did not confirm it in time: a program reading the mount right now may still see the previous state. Repeat this call (it is idempotent) to wait again.", rev)}
	}
	return nil
}

// MountWarnings returns the warning every reply with a path carries when
// depotfs is not mounted.
func (e *Env) MountWarnings() []string {
	if e.MountPoint != "" {
		return nil
	}
	return []string{"depotfs is not mounted on this host, so the reply has no mount_path: the file is stored but no program can read it at a host path until the depot is mounted."}
}

// MountPath returns where a depot path appears on this host, or "" when
// depotfs is not mounted.
func (e *Env) MountPath(p string) string {
	if e.MountPoint == "" {
		return ""
	}
	return filepath.Join(e.MountPoint, filepath.FromSlash(p))
}

// Quota is one per-identity limit and what one identity holds of it, as
// guide_cache_stats shows the caller. A plain value.
type Quota struct {
	// Name says what is counted: "sessions", "raw_uploads", ...
	Name string `json:"name"`
	// Flag is the depotfs serve flag that sets Limit.
	Flag  string `json:"flag"`
	Held  int64  `json:"held"`
	Limit int64  `json:"limit"`
}
