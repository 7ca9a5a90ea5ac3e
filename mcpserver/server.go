package mcpserver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/mcpserver/internal/resources"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
	"github.com/depotfs/depotfs/store"
)

// Defaults of Options, applied to zero fields.
const (
	DefaultName            = "depotfs"
	DefaultVersion         = "dev"
	DefaultUploadsDir      = "/uploads"
	DefaultMaxContentBytes = 16 << 20
	DefaultMaxChunks       = 65536
	// DefaultMaxBatchFiles and DefaultMaxBatchBytes bound one
	// guide_cache_files call: its entries, and their decoded content in
	// all (the size of one call's content, so the request fits the default
	// request limit).
	DefaultMaxBatchFiles = 1000
	DefaultMaxBatchBytes = DefaultMaxContentBytes
	// DefaultUploadURLTTL is how long an upload_url works by default.
	DefaultUploadURLTTL = 15 * time.Minute
	// DefaultMaxRawUploadsPerIdentity bounds the raw uploads one identity
	// has begun and not sent.
	DefaultMaxRawUploadsPerIdentity = 64
	DefaultMaxListEntries           = 100000
	DefaultCommitTimeout            = time.Minute

	DefaultResourcePageSize = 100
	DefaultMaxResourceBytes = 16 << 20
	DefaultMaxSubscriptions = 10000
	DefaultUploadTTL        = 24 * time.Hour

	// Per-identity rate bursts (Options.Rate): the calls and content bytes
	// allowed at once when a rate is set. The byte burst is raised to
	// MaxContentBytes if that is larger, so a call of the largest allowed
	// size can always pass.
	DefaultRateCallBurst = 100
	DefaultRateByteBurst = 128 << 20
)

// Options configure a Server. The zero value works: no mount, default
// limits, no fetch broker, logs to slog.Default(). New copies the Options;
// changing them afterwards has no effect. Applied, Logger and Requests are
// called from many goroutines at once and must be safe for that.
type Options struct {
	// MountPoint is the absolute host directory where the depot is mounted,
	// used to build the mount_path of replies; "" when depotfs is not
	// mounted, and replies then carry a warning instead.
	MountPoint string

	// Name and Version are reported to clients as the server's
	// implementation; defaults DefaultName and DefaultVersion.
	Name, Version string

	// Logger receives one line per tool call and transport errors; nil
	// means slog.Default(). It must not write to the stdio transport's
	// output.
	Logger *slog.Logger

	// Applied, when set, is called after every committed write with the
	// store revision of the change, before the tool replies. depotfs wires
	// it to the mount's wait for that revision, so that a program reading
	// the mount never sees stale content after an acknowledged write. An
	// error does not fail the call (the write is committed); the reply
	// carries a warning. The store watcher calls it too, before it notifies
	// resource subscribers of a change.
	Applied func(ctx context.Context, rev uint64) error

	// UploadsDir is the depot directory under which filename-only uploads
	// are placed, as <UploadsDir>/<first 16 hex digits of the SHA-256>/<name>;
	// default DefaultUploadsDir. It must be a valid depot path: New panics
	// otherwise.
	UploadsDir string

	// MaxContentBytes limits the decoded content of one call: a whole file,
	// or one chunk of a chunked upload; default DefaultMaxContentBytes.
	// Larger files travel as chunks. The total size of stored content is
	// the store's to limit.
	MaxContentBytes int64

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

	// PublicURL is the scheme, host, port and path prefix clients reach
	// the HTTP listener at ("https://depot.example.org" behind a proxy
	// that terminates TLS), from which guide_begin_upload builds its
	// upload_url. Empty: the scheme and Host of each request, which behind
	// such a proxy is plain http, and a client that checks, as depotfs
	// push does, refuses to send credentials there.
	PublicURL string

	// MaxRawUploadsPerIdentity bounds the raw uploads one identity has
	// begun (guide_begin_upload) and not sent; default
	// DefaultMaxRawUploadsPerIdentity. Another identity's are not counted.
	MaxRawUploadsPerIdentity int
	// MaxUploadBytesPerIdentity bounds what one identity's chunked uploads
	// in progress hold in the store; 0 means a quarter of the store's size
	// limit (no bound without one), so no identity's abandoned uploads can
	// take the room every other identity writes into.
	MaxUploadBytesPerIdentity int64

	// MaxListEntries limits the entries of one guide_list_directory call,
	// counting nested ones, and the entries one listing of the provider and
	// fs profiles returns; default DefaultMaxListEntries.
	MaxListEntries int

	// Tools chooses the tool profiles served; nil means DefaultProfiles.
	// ProfileGuide is always served, listed or not.
	Tools []Profile

	// MaxReadBytes limits the content one read of the provider and fs
	// profiles returns, and the size of a file search looks into; default
	// DefaultMaxReadBytes.
	MaxReadBytes int64

	// MaxRequestBytes limits the body of one HTTP request; default twice
	// MaxContentBytes plus 1 MiB, room for base64 and JSON escapes.
	MaxRequestBytes int64

	// DiskFree, when set, returns the bytes free on the disk holding the
	// database and the audit log (the smaller, if they differ); a write
	// that would leave less than DiskReserve is refused before it starts
	// with a disk_full error naming both, so the audit log and the store
	// can still commit and reads keep working. It is called from many
	// goroutines at once.
	DiskFree    func() (int64, error)
	DiskReserve int64

	// SpoolDir is the directory where an archive upload is spooled while
	// it is checked and unpacked; "" is os.TempDir(). It should be on the
	// disk DiskFree measures, so the disk reserve covers it; files left in
	// it by a crash are the caller's to remove (depotfs serve empties it
	// at start).
	SpoolDir string

	// HTTP bounds what HTTP clients can hold: stalled bodies, bytes in
	// flight, sessions; zero fields take the defaults (see HTTPLimits).
	HTTP HTTPLimits

	// LocalGrants narrows the identities that are not authenticated by a
	// credential: the local OS user on stdio, and an HTTP client when no
	// authentication is configured (loopback only, as depotfs serve
	// enforces). nil gives them full grants; a non-nil slice, even empty,
	// gives them exactly these grants (serve --grants).
	LocalGrants []grant.Grant

	// Policy is the server's own policy, the --allow and --deny prefixes
	// that bound every caller's grants; nil allows every path.
	Policy *policy.Host

	// Audit receives one record for every tool call, allowed or denied,
	// and for every refused authentication (Server.AuthFailure). A call is
	// refused while Audit.Err reports a failure, and a call whose record
	// cannot be appended fails with a system error. nil keeps no audit log
	// (for tests and embedding; depotfs serve always keeps one).
	Audit Auditor

	// Rate limits calls and content bytes per identity. A rate of zero
	// (the default) or less means unlimited, as in package ratelimit and
	// on the command line; zero bursts take the Default* values. The
	// limits apply to authenticated identities, and to callers without a
	// credential (stdio, loopback HTTP) only with RateLocal.
	Rate ratelimit.Limits
	// RateLocal applies Rate to callers without a credential too.
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
	// MaxFileBytes is the largest file accepted, checked at the edge (the
	// decoded content of a whole file, a chunked upload's total_size)
	// before anything reaches the store; 0 means no check at the edge. Set
	// it to the store's own limit, which the store enforces regardless.
	MaxFileBytes int64

	// UploadTTL is how long a filename-only upload (placed under
	// UploadsDir) is kept when the call gives neither ttl_seconds nor pin
	// true; default DefaultUploadTTL, negative for never.
	UploadTTL time.Duration

	// Requests, when set, is the fetch broker: the files readers of the
	// mount are waiting for, which guide_pending_requests and the
	// pending-requests resource show to agents. nil: nothing is ever
	// requested.
	Requests Requests

	// Backup, when set, writes an online backup of the depot to w (see
	// BackupPath), calling started with the backup's revision and the size
	// of its database before its first byte. nil: the HTTP listener
	// refuses backups.
	Backup func(ctx context.Context, w io.Writer, started func(rev uint64, dbSize int64)) error
}

// Requests is the fetch broker as the MCP tools see it (package
// store/fetch's *Broker implements it). Its methods must be safe for
// concurrent use.
type Requests = pending.Requests

// withDefaults returns a copy of o (which may be nil) with every zero field
// set to its default.
func (o *Options) withDefaults() Options {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.UploadsDir == "" {
		opts.UploadsDir = DefaultUploadsDir
	}
	if opts.MaxContentBytes <= 0 {
		opts.MaxContentBytes = DefaultMaxContentBytes
	}
	if opts.MaxChunks <= 0 {
		opts.MaxChunks = DefaultMaxChunks
	}
	if opts.MaxListEntries <= 0 {
		opts.MaxListEntries = DefaultMaxListEntries
	}
	if opts.UploadURLTTL <= 0 {
		opts.UploadURLTTL = DefaultUploadURLTTL
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	if opts.MaxRawUploadsPerIdentity <= 0 {
		opts.MaxRawUploadsPerIdentity = DefaultMaxRawUploadsPerIdentity
	}
	if opts.MaxBatchFiles <= 0 {
		opts.MaxBatchFiles = DefaultMaxBatchFiles
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = opts.MaxContentBytes
	}
	if opts.Tools == nil {
		opts.Tools = DefaultProfiles()
	}
	if opts.MaxReadBytes <= 0 {
		opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 2*opts.MaxContentBytes + 1<<20
	}
	opts.HTTP = opts.HTTP.withDefaults()
	if opts.CommitTimeout <= 0 {
		opts.CommitTimeout = DefaultCommitTimeout
	}
	if opts.ResourcePageSize <= 0 {
		opts.ResourcePageSize = DefaultResourcePageSize
	}
	if opts.MaxResourceBytes <= 0 {
		opts.MaxResourceBytes = DefaultMaxResourceBytes
	}
	if opts.MaxSubscriptions <= 0 {
		opts.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if opts.Policy == nil {
		opts.Policy, _ = policy.NewHost(nil, nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &opts.Rate
	if r.CallBurst <= 0 {
		r.CallBurst = DefaultRateCallBurst
	}
	if r.ByteBurst <= 0 {
		r.ByteBurst = DefaultRateByteBurst
	}
	r.ByteBurst = max(r.ByteBurst, int(opts.MaxContentBytes), int(opts.MaxBatchBytes))
	if opts.UploadTTL == 0 {
		opts.UploadTTL = DefaultUploadTTL
	}
	return opts
}

// Server serves the depot's MCP tools and resources over a store. It is
// safe for concurrent use: any number of calls, over any mix of transports,
// may run at once; the store serializes their writes. It owns one goroutine,
// the store watcher that notifies resource subscribers, which Close stops.
type Server struct {
	opts Options
	log  *slog.Logger
	env  *tool.Env     // what tool bodies know of the server
	rt   *tool.Runtime // the tool pipeline; the only holder of the store
	// uploads are the raw uploads guide_begin_upload begins and the
	// HTTP handler's PUTs complete.
	uploads *guide.Uploads
	res     *resources.Resources
	mcp     *server.MCPServer
	http    http.Handler

	streamable *server.StreamableHTTPServer
	sessions   *sessions
	inflight   *budget
	drain      *drain // the shutdown both transports answer by
	refusals   refusalBursts

	// done ends with Close: notification streams end, the watcher stops,
	// long polls of guide_pending_requests return at once.
	done    context.Context
	close   context.CancelFunc
	watched chan struct{} // closed when the watcher has returned; nil without one

	list       []tool.Tool // every tool served, in the order listed
	stopNotify func()      // unregisters from Options.Requests
	closeOnce  sync.Once   // Close's one-time work

	localGrants atomic.Pointer[[]grant.Grant] // Options.LocalGrants, or SetLocalGrants'; nil: full
}

// New returns a Server over st and starts its store watcher. opts may be
// nil for the defaults. The Server does not own st: closing the store is
// the caller's job, after the transports have stopped and Close returned.
// With Options.Requests, the Server registers for the broker's changes
// until Close.
func New(st store.Store, opts *Options) *Server {
	s := newServer(st, opts)
	s.watched = make(chan struct{})
	go func() {
		defer close(s.watched)
		if check := s.opts.HTTP.Recheck; check != nil {
			go s.recheck(s.done, check, func([]string) {})
		}
		s.res.Watch(s.done)
	}()
	return s
}

// newServer builds a Server and registers its tools and resources, without
// starting the watcher (tool documentation needs no store).
func newServer(st store.Store, opts *Options) *Server {
	o := opts.withDefaults()
	uploads, err := depotpath.Clean(o.UploadsDir)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: Options.UploadsDir: %v", err))
	}
	s := &Server{opts: o, log: o.Logger, stopNotify: func() {}, drain: newDrain()}
	s.SetLocalGrants(o.LocalGrants)
	s.done, s.close = context.WithCancel(context.Background())
	s.env = &tool.Env{
		MountPoint: o.MountPoint, Uploads: uploads,
		MaxContentBytes: o.MaxContentBytes, MaxFileBytes: o.MaxFileBytes, MaxReadBytes: o.MaxReadBytes,
		MaxChunks: o.MaxChunks, MaxListEntries: o.MaxListEntries,
		MaxBatchFiles: o.MaxBatchFiles, MaxBatchBytes: o.MaxBatchBytes, UploadURLTTL: o.UploadURLTTL,
		MaxRawUploadsPerIdentity: o.MaxRawUploadsPerIdentity, MaxUploadBytesPerIdentity: o.MaxUploadBytesPerIdentity,
		UploadTTL: o.UploadTTL, RateLocal: o.RateLocal, CommitTimeout: o.CommitTimeout, Applied: o.Applied,
		DiskFree: o.DiskFree, DiskReserve: o.DiskReserve, SpoolDir: o.SpoolDir,
		Log: o.Logger, Now: o.Now,
	}
	s.rt = tool.NewRuntime(st, s.env, o.Policy, o.Audit, o.Rate)
	requests := pending.New(o.Requests, s.done, s.env.MountPath)
	s.res = resources.New(s.rt, s.env, requests, o.ResourcePageSize, o.MaxResourceBytes, o.MaxSubscriptions)
	s.uploads = guide.NewUploads(s.rt)
	s.list = s.toolList(requests)

	hooks := &server.Hooks{}
	s.res.Hooks(hooks)
	hooks.AddOnError(s.rt.OnCallError)
	hooks.AddBeforeCallTool(clipToolName)
	s.mcp = server.NewMCPServer(o.Name, o.Version,
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithInstructions(s.serverInstructions()),
		server.WithToolFilter(s.rt.VisibleTools),
		server.WithHooks(hooks),
	)
	registered := make([]server.ServerTool, len(s.list))
	for i, t := range s.list {
		registered[i] = server.ServerTool{Tool: t.Spec, Handler: s.rt.Handler(t)}
	}
	s.mcp.AddTools(registered...)
	s.mcp.AddResourceTemplates(s.res.Template())
	s.mcp.AddResources(s.res.PendingResource())
	if o.Requests != nil {
		s.stopNotify = o.Requests.Notify(s.res.PendingChanged)
	}
	s.http = s.newHandler()
	s.env.Quotas = s.quotas
	return s
}

// Close ends the Server's long-lived work: open HTTP notification streams
// (a session's GET stream, subscriptions/listen requests) end, so that
// http.Server.Shutdown does not wait for them (over stdio, a listen ends
// with ServeStdio's context or input); long polls of guide_pending_requests
// reply at once with what is pending and later ones do not wait; the store
// watcher stops, so subscribers are no longer notified. Tool calls and
// resource reads, including those in flight, keep working while the store
// is open. Close waits for the watcher to return; it is idempotent and safe
// to call from any goroutine.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.close()
		s.stopNotify()
		_ = s.streamable.Shutdown(context.Background()) // stops its session sweeper
	})
	if s.watched != nil {
		<-s.watched
	}
	return nil
}

// MCP returns the underlying mcp-go server, for in-process clients
// (client.NewInProcessClient) and tests. Calls made through it carry no
// transport identity unless the caller's context has one (see package
// identity), and a failed resources/read gets mcp-go's error codes (-32603
// for a handler's error) rather than the ones Handler and ServeStdio send.
func (s *Server) MCP() *server.MCPServer { return s.mcp }

// instructions is what an MCP client shows its model about this server.
const instructions = `depotfs keeps files that you push and makes them readable by programs on the server's host at a real path (the mount), without any file ever being written to the server's disk by hand.

- guide_cache_file: store a file's content at a depot path, or give only a filename and get back a path under /uploads. The reply's mount_path is the absolute host path to hand to a program that only accepts paths.
- guide_cache_files: store many files in one call, all or nothing; much faster than one call per file.
- guide_begin_upload: get a URL to send a large file's raw bytes with one HTTP PUT (curl -T FILE URL), no JSON or base64; the PUT's response is guide_cache_file's reply.
- guide_read_file: answer a request for a file's content; large files go in chunks (upload_id, chunk_index, chunk_count, sha256).
- guide_list_directory: describe a directory you have (names, types, sizes, mtimes, nested entries) so the server knows the tree before the content arrives.
- guide_pending_requests: see which files programs on the host are waiting for (files you listed but did not send, or whose content was evicted), optionally waiting for new requests; answer each with guide_cache_file or guide_read_file at its path. Clients that subscribe to the resource depotfs://pending-requests are notified when the list changes.
- guide_cache_stats: the depot's size, limits, evictions, expiries and fetch counters.

These guide tools reply with one JSON envelope: success, data, message, warnings, stats, and on failure error {type, message, instruction}. Follow the instruction of a failed call; a failed call changed nothing.

Every file in the depot is also an MCP resource, depot:/// followed by its path (percent-encoded): resources/list pages through them, resources/read returns a file as text, or as base64 for binary files (up to a size limit; read larger files through the tools). Subscribe to a file's URI to be told when it is created, updated or removed.`
