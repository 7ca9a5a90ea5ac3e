package tool

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"
)

// Env is what tool bodies know of the server besides the store: its
// Settings, the depot directory of filename-only uploads and the
// per-identity quotas kept outside the tools. The server fills it once,
// from its Options with defaults applied, before any tool is built; it is
// read-only afterwards and safe to share.
type Env struct {
	Settings
	// Uploads is the clean depot directory of filename-only uploads.
	Uploads string
	// Quotas, when set, returns the per-tenant limits kept outside the
	// tools (sessions) and what the tenant key (see internal/tenant)
	// holds of each.
	Quotas func(key string) []Quota
}

// Settings are the server's settings that tool bodies and resources read:
// its limits, where the depot is mounted and the hooks into the host. They
// are declared once, here: mcpserver.Options embeds them (as
// mcpserver.Settings) and sets their defaults, and Env carries them to the
// tools unchanged. Applied, DiskFree, Logger and Now are called from many
// goroutines at once and must be safe for that.
type Settings struct {
	// MountPoint is the absolute host directory where the depot is mounted,
	// used to build the mount_path of replies; "" when depotfs is not
	// mounted, and replies then carry a warning instead.
	MountPoint string

	// Logger receives one line per tool call, tool bodies' warnings and
	// transport errors; nil means slog.Default(). It must not write to the
	// stdio transport's output.
	Logger *slog.Logger

	// Applied, when set, is called after every committed write with the
	// store revision of the change, before the tool replies. depotfs wires
	// it to the mount's wait for that revision, so that a program reading
	// the mount never sees stale content after an acknowledged write. An
	// error does not fail the call (the write is committed); the reply
	// carries a warning. The store watcher calls it too, before it notifies
	// resource subscribers of a change.
	Applied func(ctx context.Context, rev uint64) error

	// MaxContentBytes limits the decoded content of one call: a whole file,
	// or one chunk of a chunked upload; default DefaultMaxContentBytes.
	// Larger files travel as chunks. The total size of stored content is
	// the store's to limit.
	MaxContentBytes int64

	// MaxFileBytes is the largest file accepted, checked at the edge (the
	// decoded content of a whole file, a chunked upload's total_size)
	// before anything reaches the store; 0 means no check at the edge. Set
	// it to the store's own limit, which the store enforces regardless.
	MaxFileBytes int64

	// MaxChunks limits chunk_count of a chunked upload; default
	// DefaultMaxChunks.
	MaxChunks int

	// MaxBatchFiles limits the entries of one guide_cache_files call;
	// default DefaultMaxBatchFiles.
	MaxBatchFiles int
	// MaxBatchBytes limits the decoded content of one guide_cache_files
	// call, all entries together; default MaxContentBytes.
	MaxBatchBytes int64

	// UploadURLTTL is how long an upload_url of guide_begin_upload works;
	// default DefaultUploadURLTTL.
	UploadURLTTL time.Duration

	// MaxRawUploadsPerIdentity bounds the raw uploads one identity has
	// begun (guide_begin_upload) and not sent; default
	// DefaultMaxRawUploadsPerIdentity. Another identity's are not counted.
	MaxRawUploadsPerIdentity int
	// MaxUploadBytesPerIdentity bounds what one identity's chunked uploads
	// in progress hold in the store; 0 means a quarter of the store's size
	// limit (no bound without one), so no identity's abandoned uploads can
	// take the room every other identity writes into (see
	// Env.UploadBytesLimit).
	MaxUploadBytesPerIdentity int64
	// MaxSnapshotsPerIdentity bounds the snapshots one identity holds
	// (created with guide_snapshot, not yet deleted or expired): their
	// content is never evicted, so one identity must not be able to hold
	// the store forever; default DefaultMaxSnapshotsPerIdentity.
	MaxSnapshotsPerIdentity int

	// KeepVersions is how many replaced versions of each file the store
	// keeps besides the live one, as the store was opened with (0: none);
	// the server only reports it, in the documents and guide_cache_stats.
	KeepVersions int

	// UploadTTL is how long a filename-only upload (placed under the
	// uploads directory) is kept when the call gives neither ttl_seconds
	// nor pin true; default DefaultUploadTTL, negative for never.
	UploadTTL time.Duration

	// MaxListEntries limits the entries of one guide_list_directory call,
	// counting nested ones, and the entries one listing of the provider and
	// fs profiles returns; default DefaultMaxListEntries.
	MaxListEntries int

	// MaxReadBytes limits the content one read of the provider and fs
	// profiles returns, and the size of a file search looks into; default
	// DefaultMaxReadBytes.
	MaxReadBytes int64

	// DiskFree, when set, returns the bytes free on the disk holding the
	// database and the audit log (the smaller, if they differ); a write
	// that would leave less than DiskReserve is refused before it starts
	// with a disk_full error naming both, so the audit log and the store
	// can still commit and reads keep working.
	DiskFree    func() (int64, error)
	DiskReserve int64

	// SpoolDir is the directory where an archive upload is spooled while
	// it is checked and unpacked; "" is os.TempDir(). It should be on the
	// disk DiskFree measures, so the disk reserve covers it; files left in
	// it by a crash are the caller's to remove (depotfs serve empties it
	// at start).
	SpoolDir string

	// RateLocal applies the rate limits to callers without a credential
	// (stdio, loopback HTTP when no authentication is configured); by
	// default only authenticated identities are limited.
	RateLocal bool

	// Now is the clock of rate limits and call times; nil means time.Now.
	// Tests set it to drive the rate limiter without sleeping.
	Now func() time.Time

	// CommitTimeout bounds the write phase of a validated call, including
	// the wait for Applied; default DefaultCommitTimeout. A call that has
	// started to write finishes even if its client disconnects or the
	// transport shuts down, within this bound.
	CommitTimeout time.Duration

	// ResourcePageSize is the number of files per resources/list page;
	// default DefaultResourcePageSize.
	ResourcePageSize int

	// MaxResourceBytes limits the size of a file resources/read returns;
	// default DefaultMaxResourceBytes. A larger file is refused with an
	// error telling the client to read it with tools or through the mount.
	MaxResourceBytes int64

	// MaxSubscriptions limits the resource subscriptions held at once, over
	// all clients; default DefaultMaxSubscriptions.
	MaxSubscriptions int

	// OutputSchemas declares every tool's output schema in tools/list and
	// has the server check each structured result against it before it
	// is sent. The provider tools whose contract returns a bare value
	// (read_file, list_directory, ...) then also send it as structured
	// content, an object holding it, as a declared schema requires; their
	// text is the same either way. Off by default: the schemas take
	// 70 KB, several times the rest of tools/list, which every client
	// pays in its context window on every session; docs/tools.md shows
	// them either way.
	OutputSchemas bool

	// LinkMinBytes is the size above which a whole-file read of the fs and
	// provider profiles over HTTP answers with a resource link (a URL on
	// the same listener, see Call.FileLink) instead of the content; default
	// DefaultLinkMinBytes, negative for never. Over stdio there is no
	// listener to link to and reads answer as before.
	LinkMinBytes int64
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
		e.Logger.Warn("mcp write not yet visible in the mount", "tool", c.Name(), "path", c.Path, "revision", rev, "err", err)
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
	Flag string `json:"flag"`
	// Prefix is the depot prefix a quota in stored bytes is charged to;
	// "" for the limits counted per tenant.
	Prefix string `json:"prefix,omitempty"`
	Held   int64  `json:"held"`
	Limit  int64  `json:"limit"`
}
