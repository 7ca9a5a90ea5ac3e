package mcpserver

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/dav"
	"github.com/depotfs/depotfs/internal/clip"
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/outbox"
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
	// DefaultMaxSnapshotsPerIdentity bounds the snapshots one identity
	// holds.
	DefaultMaxSnapshotsPerIdentity = 16
	DefaultMaxListEntries          = 100000
	DefaultCommitTimeout           = time.Minute

	DefaultResourcePageSize = 100
	DefaultMaxResourceBytes = 16 << 20
	DefaultMaxSubscriptions = 10000
	DefaultUploadTTL        = 24 * time.Hour

	// Per-identity rate bursts (Options.Rate): the calls and content bytes
	// allowed at once when a rate is set. Content larger than the byte
	// burst (a call under a smaller burst, a stream, an archive) passes
	// from a full bucket and leaves it in debt (ratelimit.Limits.Bytes).
	DefaultRateCallBurst = 100
	DefaultRateByteBurst = 128 << 20
)

// Options configure a Server. The zero value works: no mount, default
// limits, no fetch broker, logs to slog.Default(). New copies the Options;
// changing them afterwards has no effect. Applied, Logger and Requests are
// called from many goroutines at once and must be safe for that.
type Options struct {
	// Settings are the limits, mount point and host hooks the tools and
	// resources read, declared once for Options and the tools alike.
	Settings

	// Name and Version are reported to clients as the server's
	// implementation; defaults DefaultName and DefaultVersion.
	Name, Version string

	// UploadsDir is the depot directory under which filename-only uploads
	// are placed, as <UploadsDir>/<first 16 hex digits of the SHA-256>/<name>;
	// default DefaultUploadsDir. It must be a valid depot path: New panics
	// otherwise.
	UploadsDir string

	// PublicURL is the scheme, host, port and path prefix clients reach
	// the HTTP listener at ("https://depot.example.org" behind a proxy
	// that terminates TLS), from which guide_begin_upload builds its
	// upload_url. Empty: the scheme and Host of each request, which behind
	// such a proxy is plain http, and a client that checks, as depotfs
	// push does, refuses to send credentials there.
	PublicURL string

	// AllowedHosts are further host names (without port) the HTTP
	// listener answers to when a request reaches it over loopback with
	// that name in its Host header: a TLS-terminating proxy on the same
	// host forwarding "Host: depot.example.org". PublicURL's host is
	// always allowed, and so are loopback names. Any other Host over
	// loopback, and any Origin header that names none of these, is
	// refused 403 (DNS-rebinding protection; see checkHost).
	AllowedHosts []string

	// Tools chooses the tool profiles served; nil means DefaultProfiles.
	// ProfileGuide is always served, listed or not.
	Tools []Profile

	// MaxRequestBytes limits the body of one HTTP request; default twice
	// MaxContentBytes plus 1 MiB, room for base64 and JSON escapes.
	MaxRequestBytes int64

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
	// credential (stdio, loopback HTTP) only with Settings.RateLocal.
	Rate ratelimit.Limits

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

	// Import, when set, loads the export read from r into the depot (see
	// ImportPath) and counts what it did, also when it fails halfway. It
	// checks every path of the export with may before writing anything,
	// and refuses the whole export with may's error (wrapped) if may
	// refuses one. nil: the HTTP listener refuses imports.
	Import func(ctx context.Context, r io.Reader, may func(path string) error) (ImportResult, error)

	// Export, when set, writes an export of the depot at one revision to
	// w (see ExportPath), calling started with the revision before its
	// first byte. nil: the HTTP listener refuses exports.
	Export func(ctx context.Context, w io.Writer, started func(rev uint64)) error
}

// Settings are the part of Options the tools and resources read: the
// limits on a call (MaxContentBytes, MaxFileBytes, MaxChunks,
// MaxBatchFiles, MaxBatchBytes, MaxListEntries, MaxReadBytes,
// MaxRawUploadsPerIdentity, MaxUploadBytesPerIdentity,
// MaxSnapshotsPerIdentity, MaxResourceBytes, MaxSubscriptions,
// ResourcePageSize, LinkMinBytes), its times (UploadURLTTL, UploadTTL, CommitTimeout),
// the disk reserve (DiskFree, DiskReserve, SpoolDir), RateLocal,
// MountPoint, KeepVersions, and the hooks Applied, Logger and Now. Zero
// fields take the Default* values (KeepVersions excepted: 0 keeps none). A limit is declared there once; New
// hands the same values to the tools.
type Settings = tool.Settings

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
	opts.Name = cmp.Or(opts.Name, DefaultName)
	opts.Version = cmp.Or(opts.Version, DefaultVersion)
	opts.Logger = cmp.Or(opts.Logger, slog.Default())
	opts.UploadsDir = cmp.Or(opts.UploadsDir, DefaultUploadsDir)
	orDefault(&opts.MaxContentBytes, DefaultMaxContentBytes)
	orDefault(&opts.MaxChunks, DefaultMaxChunks)
	orDefault(&opts.MaxListEntries, DefaultMaxListEntries)
	orDefault(&opts.UploadURLTTL, DefaultUploadURLTTL)
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	orDefault(&opts.MaxRawUploadsPerIdentity, DefaultMaxRawUploadsPerIdentity)
	orDefault(&opts.MaxSnapshotsPerIdentity, DefaultMaxSnapshotsPerIdentity)
	orDefault(&opts.MaxBatchFiles, DefaultMaxBatchFiles)
	orDefault(&opts.MaxBatchBytes, opts.MaxContentBytes)
	if opts.Tools == nil {
		opts.Tools = DefaultProfiles()
	}
	orDefault(&opts.MaxReadBytes, DefaultMaxReadBytes)
	if opts.LinkMinBytes == 0 {
		opts.LinkMinBytes = DefaultLinkMinBytes
	}
	orDefault(&opts.MaxRequestBytes, 2*opts.MaxContentBytes+1<<20)
	opts.HTTP = opts.HTTP.withDefaults()
	orDefault(&opts.CommitTimeout, DefaultCommitTimeout)
	orDefault(&opts.ResourcePageSize, DefaultResourcePageSize)
	orDefault(&opts.MaxResourceBytes, DefaultMaxResourceBytes)
	orDefault(&opts.MaxSubscriptions, DefaultMaxSubscriptions)
	if opts.Policy == nil {
		opts.Policy, _ = policy.NewHost(nil, nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	r := &opts.Rate
	orDefault(&r.CallBurst, DefaultRateCallBurst)
	orDefault(&r.ByteBurst, DefaultRateByteBurst)
	opts.UploadTTL = cmp.Or(opts.UploadTTL, DefaultUploadTTL)
	return opts
}

// orDefault sets *v to def when it is zero or less: the default of a
// limit left unset.
func orDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
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
	dav     *dav.Handler // WebDAV, one of the doors (doors.go)

	streamable *server.StreamableHTTPServer
	sessions   *sessions
	streams    *outbox.Registry // the sessions' open GET streams, where their resource notifications go
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
			go s.recheck(s.done, check)
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
	s.env = &tool.Env{Settings: o.Settings, Uploads: uploads}
	s.rt = tool.NewRuntime(st, s.env, o.Policy, o.Audit, o.Rate)
	requests := pending.New(o.Requests, s.done, s.env.MountPath)
	s.streams = outbox.NewRegistry()
	s.res = resources.New(s.rt, s.env, requests, s.streams)
	s.uploads = guide.NewUploads(s.rt)
	s.list = s.toolList(requests)

	hooks := &server.Hooks{}
	s.res.Hooks(hooks)
	hooks.AddAfterSubscriptionsListen(holdListenResponse)
	hooks.AddOnError(s.rt.OnCallError)
	// mcp-go echoes an unknown tool name in its error, and the name reaches
	// the log line and the audit record: it is bounded first. No tool has
	// a name longer than clip.Max, so a clipped name is refused as
	// unknown, with its length and hash.
	hooks.AddBeforeCallTool(func(_ context.Context, _ any, req *mcp.CallToolRequest) {
		req.Params.Name = clip.String(req.Params.Name)
	})
	serverOpts := []server.ServerOption{
		server.WithToolCapabilities(false),
		server.WithResourceCapabilities(true, false),
		server.WithInstructions(s.serverInstructions()),
		server.WithToolFilter(s.rt.VisibleTools),
		server.WithHooks(hooks),
	}
	if o.OutputSchemas {
		serverOpts = append(serverOpts, server.WithOutputSchemaValidation())
	}
	s.mcp = server.NewMCPServer(o.Name, o.Version, serverOpts...)
	registered := make([]server.ServerTool, len(s.list))
	for i, t := range s.list {
		spec := t.Spec
		if o.OutputSchemas {
			// Built only when declared: building one decodes and encodes
			// the whole reply frame, most of a server's start.
			if out, ok := t.Docs.OutputSchema(spec.Name); ok {
				spec.RawOutputSchema = out
			}
		}
		registered[i] = server.ServerTool{Tool: spec, Handler: s.rt.Handler(t)}
	}
	s.mcp.AddTools(registered...)
	s.mcp.AddResourceTemplates(s.res.Template())
	s.mcp.AddResources(s.res.PendingResource())
	if o.Requests != nil {
		s.stopNotify = o.Requests.Notify(s.res.PendingChanged)
	}
	s.dav = s.newDAV()
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

These guide tools reply with one JSON envelope: success, data, message, warnings, stats, and on failure error {type, message, instruction}. Follow the instruction of a failed call; a failed call changed nothing, unless its message says its outcome is unknown.

Every file in the depot is also an MCP resource, depot:/// followed by its path (percent-encoded): resources/list pages through them, resources/read returns a file as text, or as base64 for binary files (up to a size limit; read larger files through the tools). Subscribe to a file's URI to be told when it is created, updated or removed.`

// SetLocalGrants replaces Options.LocalGrants (nil: full grants) for HTTP
// requests that arrive afterwards; depotfs serve calls it on SIGHUP. A
// stdio session keeps the grants it started with. It is safe for
// concurrent use.
func (s *Server) SetLocalGrants(grants []grant.Grant) {
	if grants == nil {
		s.localGrants.Store(nil)
		return
	}
	c := slices.Clone(grants)
	s.localGrants.Store(&c)
}

// local applies the local grants to an identity not backed by a
// credential.
func (s *Server) local(id identity.Identity) identity.Identity {
	if g := s.localGrants.Load(); g != nil {
		id.Full, id.Grants = false, slices.Clone(*g)
	}
	return id
}
