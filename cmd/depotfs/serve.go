package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/memlimit"
	"github.com/depotfs/depotfs/internal/metrics"
	"github.com/depotfs/depotfs/internal/sdnotify"
	"github.com/depotfs/depotfs/mcpserver"
	"github.com/depotfs/depotfs/nfsserver"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
	"github.com/depotfs/depotfs/vfs"
)

// serveConfig is everything "depotfs serve" is told by flags and environment.
type serveConfig struct {
	db             string
	mount          string
	listen         string
	metricsListen  string
	listenSet      bool // --listen given explicitly (flag or environment)
	stdio          bool
	noMount        bool
	insecure       bool
	uid, gid       int
	umask          string
	blobCacheSize  byteSize
	memoryLimit    byteSize
	uploadTimeout  time.Duration
	uploadTTL      time.Duration
	fetchTimeout   time.Duration
	maxStoreSize   byteSize
	maxFileSize    byteSize
	quotas         quotaFlag
	diskReserve    byteSize
	publicURL      string
	uploadBytesPer byteSize // --max-upload-bytes-per-identity
	fileSizeSet    bool     // --max-file-size was given (flag or environment)
	shutdown       time.Duration
	logLevel       slog.Level
	tools          string // --tools as given
	envFile        string
	explicit       map[string]bool     // flags the command line or environment set, which --env-file does not override
	envStarted     map[string]string   // --env-file's settings at start
	profiles       []mcpserver.Profile // --tools parsed by validate
	settings       mcpserver.Settings  // the flags that set one as they are
	feedHistory    int                 // --feed-history
	mountOpts      vfs.Options         // the flags that set one as they are
	auth           authConfig
	http           httpConfig
	enforce        enforceConfig
	store          storeConfig
	key            keyConfig
	resealRate     byteSize // --reseal-rate
	nfs            nfsConfig
}

func (c *serveConfig) flags(fs *flag.FlagSet) {
	c.blobCacheSize, c.memoryLimit, c.diskReserve = defaultBlobCacheSize, defaultMemoryLimit, defaultDiskReserve
	c.maxStoreSize, c.maxFileSize = defaultMaxStoreSize, defaultMaxFileSize
	fs.StringVar(&c.db, "db", defaultDB(), "bbolt database `file` holding the depot (its directory is created if missing)")
	fs.StringVar(&c.mount, "mount", defaultMountDir(), "`dir`ectory where the read-only FUSE mount appears (created if missing)")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7411", "`address` for MCP over streamable HTTP, endpoint path /mcp; it also serves /metrics (behind the same authentication) and /healthz (without)")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "`address` that serves only /metrics and /healthz, without authentication: loopback unless --insecure; empty: none")
	fs.BoolVar(&c.stdio, "stdio", false, "serve MCP on stdin/stdout instead of HTTP (for a client that launches depotfs); logs go to stderr")
	fs.BoolVar(&c.noMount, "no-mount", false, "run the MCP server and the store without the FUSE mount")
	fs.BoolVar(&c.mountOpts.AllowNonEmpty, "allow-non-empty-mount", false, "mount over a --mount directory that has entries, hiding them while mounted (refused otherwise)")
	fs.BoolVar(&c.insecure, "insecure", false, "allow --listen on a non-loopback address without authentication (or with bearer tokens in clear text)")
	fs.IntVar(&c.uid, "uid", os.Getuid(), "owner `uid` shown for every file in the mount")
	fs.IntVar(&c.gid, "gid", os.Getgid(), "owner `gid` shown for every file in the mount")
	fs.StringVar(&c.umask, "umask", "022", "octal `mask` cleared from the modes shown in the mount (files 0444, directories 0555 before the mask)")
	fs.BoolVar(&c.mountOpts.AllowOther, "allow-other", true, "let users other than depotfs's own read the mount (allow_other; the kernel still enforces the modes shown)")
	fs.BoolVar(&c.mountOpts.Exec, "exec", false, "allow executing files from the mount (mounted noexec otherwise)")
	fs.BoolVar(&c.mountOpts.NoXattrs, "no-xattrs", false, "do not serve the user.depotfs.* provenance extended attributes")
	fs.BoolVar(&c.mountOpts.Passthrough, "passthrough", true, "serve files of 256 KiB or more through FUSE passthrough from a blob cache, at local-disk speed (needs root and Linux 6.9 or later; off by itself otherwise)")
	fs.StringVar(&c.mountOpts.BlobCacheDir, "blob-cache-dir", "", "`dir`ectory of the passthrough blob cache (blobs unchanged since the last run are kept, the rest deleted at start); empty: \"blobs\" beside the database")
	fs.Var(&c.blobCacheSize, "blob-cache-size", "`size` limit on the passthrough blob cache, e.g. 1GiB; least recently used blobs are deleted first; 0 turns passthrough off")
	fs.Var(&c.memoryLimit, "memory-limit", "`size` of depotfs's own memory (the Go heap; database pages mapped from the file are not counted) that the garbage collector works to: it runs when the heap reaches it, and once the live heap is past half of it, whenever the heap has doubled; 0: the Go runtime's defaults; GOMEMLIMIT or GOGC in the environment wins")
	fs.DurationVar(&c.uploadTimeout, "upload-timeout", time.Hour, "delete a chunked upload, and free the room its chunks take under --max-store-size, after this long without a new chunk")
	fs.DurationVar(&c.settings.UploadURLTTL, "upload-url-ttl", mcpserver.DefaultUploadURLTTL, "how long an upload_url of guide_begin_upload (a raw HTTP PUT of a large file) works")
	fs.StringVar(&c.publicURL, "public-url", "", "`URL` clients reach --listen at (scheme, host, port and any path prefix), e.g. https://depot.example.org behind a proxy that terminates TLS; guide_begin_upload builds its upload_url on it; empty: on each request's scheme and Host")
	fs.IntVar(&c.settings.MaxRawUploadsPerIdentity, "max-raw-uploads-per-identity", mcpserver.DefaultMaxRawUploadsPerIdentity, "raw uploads (guide_begin_upload) one tenant (every credential with the same grants) may have begun and not sent; its next one is refused, other tenants' are not")
	fs.Var(&c.uploadBytesPer, "max-upload-bytes-per-identity", "`size` one authenticated tenant's chunked uploads in progress may hold (every credential with the same grants; the local user's too with --rate-local); a chunk beyond is refused, other tenants' are not; 0: a quarter of --max-store-size")
	fs.IntVar(&c.settings.MaxSnapshotsPerIdentity, "max-snapshots-per-identity", mcpserver.DefaultMaxSnapshotsPerIdentity, "snapshots (guide_snapshot) one tenant (every credential with the same grants) may hold at once; its next one is refused until it deletes one, other tenants' are not (their content is never evicted, so one tenant must not hold the store forever)")
	fs.IntVar(&c.settings.KeepVersions, "keep-versions", store.DefaultKeepVersions, "replaced versions of each file kept besides the live one, for guide_file_history and guide_restore; they count against --max-store-size and are dropped first, oldest first, when room is needed; 0: keep none (snapshots still keep theirs)")
	fs.IntVar(&c.feedHistory, "feed-history", bolt.DefaultHistory, "changes the depot keeps for its change feed (guide_changes, GET /changes, resource subscriptions): a reader resumes from any of them, after a restart too; an older cursor is told to resync; also kept in memory (about 300 bytes each); every host of a NATS depot should use the same")
	fs.DurationVar(&c.uploadTTL, "upload-ttl", 24*time.Hour, "remove a filename-only upload (under /uploads) after this long, unless the call gave ttl_seconds or pin; 0: keep uploads")
	fs.DurationVar(&c.fetchTimeout, "fetch-timeout", fetch.DefaultTimeout, "how long a program opening a file whose content is not stored waits for an agent to send it, before it gets an I/O error")
	fs.Var(&c.diskReserve, "disk-reserve", "free `size` kept on the disks of the database and the audit log: a write that would leave less is refused with a disk_full error (reads keep working, and the audit log and database can still commit); 0: no check")
	fs.Var(&c.maxStoreSize, "max-store-size", "`size` limit on all stored content (identical content counted once), e.g. 512MiB or 10GB; chunks of uploads in progress count too; when a write would exceed it, the least recently used unpinned files are evicted; 0: no limit")
	fs.Var(&c.quotas, "quota", "`PREFIX=SIZE` (repeatable, or comma-separated): the most stored below PREFIX, e.g. /projects/a=10GiB, counting files (pinned ones too), versions snapshots hold and uploads in progress there, each copy whole; a write that would pass it is refused (limit) and evicts nothing; default: none")
	fs.Var(&c.maxFileSize, "max-file-size", "`size` limit on one file, e.g. 100MiB; larger files are refused; 0: no limit; when not given, the default follows --max-store-size if that is smaller")
	fs.DurationVar(&c.shutdown, "shutdown-timeout", 30*time.Second, "how long a signal waits, in all, for in-flight calls and files open in the mount before stopping anyway")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	fs.BoolVar(&c.mountOpts.Debug, "debug-fuse", false, "log every FUSE request (very verbose)")
	fs.IntVar(&c.settings.ResourcePageSize, "resource-page-size", mcpserver.DefaultResourcePageSize, "`count` of files per page of the MCP resources/list")
	fs.Int64Var(&c.settings.MaxResourceBytes, "max-resource-bytes", mcpserver.DefaultMaxResourceBytes, "largest file, in `bytes`, an MCP resources/read returns; larger files are read with tools or through the mount")
	fs.Int64Var(&c.settings.LinkMinBytes, "link-min-bytes", mcpserver.DefaultLinkMinBytes, "a whole-file read over HTTP (fs read, provider read_file and read_file_binary) of a file larger than this many `bytes` answers with a resource link, a URL on this listener the same credentials GET (ranges, ETag = sha256), not the content; -1: never")
	fs.BoolVar(&c.settings.OutputSchemas, "output-schemas", false, "declare every tool's output schema in tools/list and check every structured result against it before it is sent; the provider tools that reply with a bare value then also send it as structured content (their text stays the same); off by default because the schemas add about 70 KB to tools/list, which every client pays on every session (docs/tools.md shows them)")
	fs.StringVar(&c.tools, "tools", "guide,provider", "comma-separated tool `profiles` to serve: guide (the push tools, always on), provider (read-only file-provider tools for scanners), fs (filesystem tools: list, read, write, mkdir, delete, copy, move, info, search)")
	fs.StringVar(&c.envFile, "env-file", "", "read DEPOTFS_<FLAG>=value settings from this `file` (systemd EnvironmentFile syntax); the command line and the environment win over it; SIGHUP re-reads its log level and grants")
	c.auth.flags(fs)
	c.http.flags(fs)
	c.enforce.flags(fs)
	c.store.flags(fs)
	c.key.flags(fs)
	c.resealRate = bolt.DefaultResealRate
	fs.Var(&c.resealRate, "reseal-rate", "`size` of content per second a sealed bolt depot reseals in the background after 'depotfs key rotate --reencrypt', bounding the extra I/O")
	c.nfs.flags(fs)
}

// Default size limits.
const (
	defaultMaxStoreSize byteSize = 10 << 30
	defaultMaxFileSize  byteSize = 100 << 20
	// defaultBlobCacheSize bounds the passthrough copies of stored files.
	defaultBlobCacheSize byteSize = 1 << 30
	// defaultMemoryLimit is --memory-limit's default (see
	// internal/memlimit): the heap of the mount's nodes of about 100,000
	// files the kernel knows (~0.6 KB each) plus the MCP server.
	defaultMemoryLimit byteSize = 128 << 20
)

// defaultDataDir is where the database lives unless --db says otherwise:
// /var/lib/depotfs for root, the XDG state directory for anyone else.
func defaultDataDir() string {
	return userDir("/var/lib/depotfs", "XDG_STATE_HOME", "depotfs", ".local/state/depotfs")
}

// defaultDB is the database unless --db says otherwise.
func defaultDB() string { return filepath.Join(defaultDataDir(), "depot.db") }

// defaultMountDir is where the mount appears unless --mount says otherwise:
// /mnt/depot for root, a directory under XDG_RUNTIME_DIR or the home
// directory for anyone else.
func defaultMountDir() string {
	return userDir("/mnt/depot", "XDG_RUNTIME_DIR", "depotfs/mnt", "depot")
}

// userDir is root's directory for root; for anyone else, sub below the
// directory the environment variable env names, else home below the home
// directory, else home's last component in the temporary directory.
func userDir(root, env, sub, home string) string {
	h, err := os.UserHomeDir()
	switch {
	case os.Geteuid() == 0:
		return root
	case os.Getenv(env) != "":
		return filepath.Join(os.Getenv(env), sub)
	case err == nil:
		return filepath.Join(h, home)
	}
	return filepath.Join(os.TempDir(), filepath.Base(home))
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	// SIGHUP reloads instead of killing the process, from the start: a
	// reload sent while depotfs is still starting waits for it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var cfg serveConfig
	fs := newFlagSet("serve", `Usage: depotfs serve [flags]

Runs the MCP server (streamable HTTP on --listen, or stdio with --stdio), the
embedded store (--db) and the read-only FUSE mount (--mount) in one process.
SIGINT or SIGTERM refuses new calls and new opens in the mount at once, lets
in-flight calls and open files finish (within one --shutdown-timeout),
unmounts and exits 0. SIGHUP re-reads the tokens file, the CRL and, from --env-file,
the log level and grants, and keeps serving. A mount left behind by a crashed
depotfs is recovered on start. Under systemd (Type=notify) it sends READY=1
once the mount and the listener are up.

Flags:
`)
	cfg.flags(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if cfg.envFile != "" {
		var err error
		if cfg.explicit, cfg.envStarted, err = applyEnvFile(fs, cfg.envFile); err != nil {
			return usageError{err}
		}
	}
	cfg.noteSet(fs)
	// In this order, the first failure wins: validate needs auth resolved.
	if err := cmp.Or(cfg.auth.resolve(fs, cfg.db, cfg.stdio), cfg.validate(), cfg.enforce.resolve(cfg.db)); err != nil {
		return usageError{err}
	}
	// Logs never go to stdout: with --stdio it carries the MCP protocol.
	level := new(slog.LevelVar)
	level.Set(cfg.logLevel)
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	return serve(ctx, cfg, log, level, hup)
}

// noteSet records which flags whose defaults depend on others were given,
// on the command line or in the environment.
func (c *serveConfig) noteSet(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		c.listenSet = c.listenSet || f.Name == "listen"
		c.fileSizeSet = c.fileSizeSet || f.Name == "max-file-size"
	})
}

func (c *serveConfig) validate() error {
	if c.maxStoreSize > 0 && c.maxFileSize > c.maxStoreSize && !c.fileSizeSet {
		// The default file limit follows a smaller store limit: a
		// 3584KiB store holds files of up to 3584KiB.
		c.maxFileSize = c.maxStoreSize
	}
	profiles, toolsErr := mcpserver.ParseProfiles(c.tools)
	c.profiles = profiles
	_, umaskErr := parseUmask(c.umask)
	return cmp.Or(
		failIf(c.stdio && c.listenSet, "--stdio and --listen are exclusive: choose one transport"),
		c.http.validate(),
		failIf(c.uid < 0 || c.gid < 0, "--uid and --gid must not be negative"),
		umaskErr,
		failIf(c.settings.ResourcePageSize <= 0 || c.settings.MaxResourceBytes <= 0, "--resource-page-size and --max-resource-bytes must be positive"),
		c.store.validate(),
		failIf(toolsErr != nil, "--tools %q: %w", c.tools, toolsErr),
		failIf(c.fetchTimeout <= 0, "--fetch-timeout %v: want a positive duration such as 30s", c.fetchTimeout),
		failIf(c.settings.UploadURLTTL <= 0, "--upload-url-ttl %v: want a positive duration such as 15m", c.settings.UploadURLTTL),
		checkPublicURL(c.publicURL),
		failIf(c.settings.MaxRawUploadsPerIdentity < 1, "--max-raw-uploads-per-identity %d: want at least 1", c.settings.MaxRawUploadsPerIdentity),
		failIf(c.settings.MaxSnapshotsPerIdentity < 1, "--max-snapshots-per-identity %d: want at least 1", c.settings.MaxSnapshotsPerIdentity),
		failIf(c.settings.KeepVersions < 0, "--keep-versions %d: want 0 (keep none) or more", c.settings.KeepVersions),
		failIf(c.feedHistory < 1, "--feed-history %d: want 1 or more", c.feedHistory),
		failIf(c.uploadTTL < 0, "--upload-ttl %v: want a positive duration, or 0 to keep uploads", c.uploadTTL),
		failIf(c.maxStoreSize > 0 && c.maxFileSize > c.maxStoreSize,
			"--max-file-size %v is larger than --max-store-size %v: such a file could never be stored", &c.maxFileSize, &c.maxStoreSize),
		checkListen(c.listen, c.insecure || c.stdio, &c.auth), // --stdio does not listen (nor take --listen: above)
		checkMetricsListen(c.metricsListen, c.insecure),
		c.nfs.validate(),
	)
}

// checkPublicURL refuses a --public-url that is not an absolute http or
// https URL without query or fragment: upload URLs are built by appending
// to it.
func checkPublicURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("--public-url %q: want an http or https URL such as https://depot.example.org or https://gw.example.org:8443/depot, without query, fragment or user", s)
	}
	return nil
}

// checkMetricsListen refuses a non-loopback --metrics-listen without
// --insecure: it has no authentication.
func checkMetricsListen(addr string, insecure bool) error {
	if addr == "" {
		return nil
	}
	if loopback, err := isLoopback("--metrics-listen", addr); err != nil || loopback || insecure {
		return err
	}
	return fmt.Errorf("--metrics-listen %q is not a loopback address and has no authentication: "+
		"listen on 127.0.0.1, scrape /metrics on --listen with its credentials, or pass --insecure if that is really intended", addr)
}

func parseUmask(s string) (fs.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("--umask %q: want an octal mask such as 022", s)
	}
	return fs.FileMode(m), nil
}

// serve runs until ctx is cancelled (a signal) or a transport fails, then
// shuts down in order: stop taking calls, finish in-flight ones, unmount,
// close the store.
func serve(ctx context.Context, cfg serveConfig, log *slog.Logger, level *slog.LevelVar, hup <-chan os.Signal) (err error) {
	// Certificates, CRL and tokens first: a mistake there should stop
	// depotfs before it opens the database or mounts anything.
	ha, err := cfg.auth.setup(log)
	if err != nil {
		return err
	}
	defer memlimit.Start(int64(cfg.memoryLimit), log)()
	if ha.crl != nil {
		go watchCRLExpiry(ctx, ha.crl.NextUpdate, cfg.auth.crl, log)
	}
	// systemd (Type=notify) hears READY=1 only once the mount and the
	// listener are up, and STOPPING=1 as soon as shutdown begins.
	notifier, err := sdnotify.FromEnv()
	if err != nil {
		log.Warn("not notifying systemd", "err", err)
	}
	stopping := make(chan struct{})
	stopNotify := context.AfterFunc(ctx, func() {
		defer close(stopping)
		notify(log, notifier, sdnotify.Stopping, "STATUS=stopping")
	})
	defer func() {
		if !stopNotify() {
			<-stopping
		}
		notifier.Close()
	}()
	// The whole stop gets one --shutdown-timeout from the signal: calls in
	// flight and files open in the mount drain under the same deadline.
	stopBy := sync.OnceValue(func() time.Time { return time.Now().Add(cfg.shutdown) })
	defer context.AfterFunc(ctx, func() { stopBy() })()
	kek, err := cfg.key.load()
	if err != nil {
		return err
	}
	sealed := kek != nil
	st, exchange, closeStore, err := openStore(ctx, cfg, kek, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := closeStore(); cerr != nil && err == nil {
			err = fmt.Errorf("close store: %w", cerr)
		}
	}()

	// The audit log before the mount: a log that cannot be opened (or was
	// tampered with) stops depotfs before it serves anything.
	auditStart := time.Now()
	alog, err := audit.Open(cfg.enforce.auditLog, &audit.Options{MaxSize: int64(cfg.enforce.auditMaxSize),
		RetainSize: int64(cfg.enforce.auditRetain), RetainAge: cfg.enforce.auditRetainAge, Logger: log})
	if err != nil {
		if errors.Is(err, audit.ErrTampered) {
			return fmt.Errorf("audit log: %w (run 'depotfs audit verify --audit-log %s' for details)", err, cfg.enforce.auditLog)
		}
		return fmt.Errorf("audit log: %w", err)
	}
	defer func() {
		if cerr := alog.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close audit log: %w", cerr)
		}
	}()
	// Refused calls go to the log grouped per identity and reason, one
	// record per burst with its count, as refused authentications do;
	// deferred after the log's Close, so it writes what it still counts
	// before the log closes.
	calls := audit.NewBursts(alog, 0, log)
	defer calls.Close()
	seq, _ := alog.Head()
	log.Info("audit log verified", "file", cfg.enforce.auditLog, "head", seq, "took", time.Since(auditStart).Round(time.Millisecond))
	log.Info("enforcing", "allow", strings.Join(cfg.enforce.host.Allow(), ","), "deny", strings.Join(cfg.enforce.host.Deny(), ","),
		"audit_log", cfg.enforce.auditLog, "rate_calls", cfg.enforce.rateCalls, "rate_bytes", cfg.enforce.rateBytes.String())

	opts := &mcpserver.Options{Version: version(), Tools: cfg.profiles, Policy: cfg.enforce.host, Audit: calls,
		Rate: cfg.enforce.rate(), PublicURL: cfg.publicURL, AllowedHosts: cfg.http.allowedHosts, HTTP: cfg.http.limits(),
		Settings: cfg.settings}
	s := &opts.Settings
	s.Logger, s.RateLocal, s.MaxFileBytes, s.MaxUploadBytesPerIdentity = log, cfg.enforce.rateLocal, int64(cfg.maxFileSize), int64(cfg.uploadBytesPer)
	s.UploadTTL = cmp.Or(cfg.uploadTTL, -1) // 0 keeps uploads: never (negative) to mcpserver
	s.DiskFree, s.DiskReserve, s.SpoolDir = diskFree(cfg.db, cfg.enforce.auditLog), int64(cfg.diskReserve), spoolDir(cfg.db)
	if err := prepareSpool(opts.SpoolDir); err != nil {
		return err
	}
	if ha.authn != nil {
		// Open streams and sessions are authenticated again every second,
		// so a revocation ends them.
		opts.HTTP.Recheck = func(r *http.Request) error { _, err := ha.authn.Authenticate(r); return err }
	}
	if cfg.auth.grants.set {
		opts.LocalGrants = cfg.auth.grants.grants
	}
	if b, ok := st.(*bolt.Store); ok {
		opts.Backup = onlineBackup(b, opts.SpoolDir, cfg.enforce.auditLog)
	} else {
		opts.Backup = exportBackup(st, opts.SpoolDir, cfg.enforce.auditLog)
	}
	opts.Export = func(ctx context.Context, w io.Writer, started func(uint64)) error {
		_, err := exportStore(ctx, st, false, w, started)
		return err
	}
	opts.Import = func(ctx context.Context, r io.Reader, may func(string) error) (mcpserver.ImportResult, error) {
		return importFrom(ctx, st, r, may)
	}
	// Metrics read the store and the broker at each scrape, and hear every
	// call through the audit log and every FUSE request through vfs.
	mopts := metrics.Options{Tools: mcpserver.CallNames(), Store: func(ctx context.Context) (metrics.StoreStats, error) {
		s, err := st.Stats(ctx)
		return metrics.StoreStats(s), err
	}}
	if qs, ok := st.(store.Quotas); ok && len(cfg.quotas) > 0 {
		mopts.Quotas = func(ctx context.Context) ([]metrics.Quota, error) {
			uses, err := qs.Quotas(ctx)
			out := make([]metrics.Quota, len(uses))
			for i, u := range uses {
				out[i] = metrics.Quota(u)
			}
			return out, err
		}
	}
	var broker *fetch.Broker
	if !cfg.noMount || cfg.nfs.addr != "" {
		// The broker asks agents for files a program opens without their
		// content; it is closed before the unmount, so waiting programs
		// get an I/O error instead of holding the unmount up.
		broker = fetch.New(st, &fetch.Options{Timeout: cfg.fetchTimeout, Logger: log, Exchange: exchange})
		mopts.Fetch = func() metrics.FetchStats { return metrics.FetchStats(broker.Stats()) }
	}
	met := metrics.New(mopts)
	if t, ok := st.(interface{ TamperedChunks() uint64 }); ok && kek != nil {
		met.WatchTampered(t.TamperedChunks)
	}
	opts.Audit = meteredAudit{EarlyAuditor: calls, m: met}
	// drainMount closes the broker and, after a signal, waits until stopBy
	// for the files open in the mount; nil without a mount.
	var drainMount func()
	if !cfg.noMount {
		umask, _ := parseUmask(cfg.umask)
		mo := cfg.mountOpts
		mo.UID, mo.GID, mo.Umask, mo.Logger, mo.Fetcher, mo.Observer = uint32(cfg.uid), uint32(cfg.gid), umask, log, broker, met
		mo.Shared = exchange != nil // only a depot several hosts share has an exchange
		mo.Passthrough = mo.Passthrough && cfg.blobCacheSize > 0
		mo.BlobCacheDir = cmp.Or(mo.BlobCacheDir, filepath.Join(filepath.Dir(cfg.db), "blobs"))
		if sealed && mo.Passthrough && !memoryBacked(mo.BlobCacheDir) {
			// Passthrough serves plaintext copies from the blob cache:
			// with sealed content they may only live in memory.
			log.Info("passthrough off: the depot is sealed and --blob-cache-dir is not on tmpfs", "blob_cache_dir", mo.BlobCacheDir)
			mo.Passthrough = false
		}
		mo.BlobCacheBytes = int64(cfg.blobCacheSize)
		m, err := vfs.Mount(ctx, cfg.mount, st, &mo)
		if err != nil {
			broker.Close()
			return fmt.Errorf("mount %s: %w", cfg.mount, err)
		}
		// A signal: no new opens (they fail with ESHUTDOWN), files already
		// open are read to their end before the unmount.
		defer context.AfterFunc(ctx, m.RefuseOpens)()
		drainMount = sync.OnceFunc(func() {
			broker.Close()
			if ctx.Err() != nil && m.OpenFiles() > 0 {
				log.Info("shutting down: waiting for files open in the mount to be closed", "open", m.OpenFiles(), "until", stopBy().Format(time.RFC3339Nano))
				wctx, cancel := context.WithDeadline(context.Background(), stopBy())
				if werr := m.WaitClosed(wctx); werr != nil {
					log.Warn("unmounting with files still open: their readers get an error", "err", werr)
				}
				cancel()
			}
		})
		defer func() {
			drainMount()
			if uerr := m.Unmount(); uerr != nil {
				log.Error("unmount failed", "mount", cfg.mount, "err", uerr)
			} else {
				log.Info("unmounted", "mount", cfg.mount)
			}
		}()
		met.WatchBlobCache(func() (metrics.BlobCache, bool) {
			s, ok := m.BlobCacheStats()
			return metrics.BlobCache(s), ok
		})
		opts.MountPoint = m.Dir()
		opts.Applied = m.WaitApplied
		opts.Requests = broker
	}
	var fetcher nfsserver.Fetcher
	if broker != nil {
		fetcher = broker
		if cfg.noMount {
			defer broker.Close()
		}
	}
	stopNFS, err := startNFS(cfg, st, fetcher, cfg.enforce.host, calls, log)
	if err != nil {
		return err
	}
	defer nfsStopper(ctx, stopNFS, log)()
	checker := healthChecks(ctx, st, opts.MountPoint, log)
	srv := mcpserver.New(st, opts)
	met.WatchSessions(srv)
	// A signal ends guide_pending_requests long polls and notification
	// streams at once, so they do not hold the transports' shutdown up.
	defer context.AfterFunc(ctx, func() { srv.Close() })()
	defer srv.Close()

	// The reloader and the watchdog stop when serve returns, whatever the
	// reason.
	bgCtx, stopBackground := context.WithCancel(ctx)
	defer stopBackground()
	rl := &reloader{log: log, level: level, notifier: notifier, auth: ha, envFile: cfg.envFile,
		explicit: cfg.explicit, started: cfg.envStarted, grants: srv.SetLocalGrants}
	// ready logs the ready line (auth: its attributes, over HTTP) and tells
	// systemd.
	ready := func(mcp string, auth ...any) {
		mount := cfg.mount
		if cfg.noMount {
			mount = "none (--no-mount)"
		}
		attrs := append([]any{storeAttr(cfg), "mount", mount, "mcp", mcp}, auth...)
		log.Info("depotfs ready", append(attrs, "tools", cfg.tools, slog.Group("limits", "max_store_size", cfg.maxStoreSize.String(),
			"max_file_size", cfg.maxFileSize.String(), "fetch_timeout", cfg.fetchTimeout, "upload_ttl", cfg.uploadTTL))...)
		notify(log, notifier, sdnotify.Ready, "STATUS=serving MCP on "+mcp)
		go rl.run(bgCtx, hup)
		if interval, ok := sdnotify.WatchdogInterval(); ok && notifier != nil {
			go notifier.RunWatchdog(bgCtx, interval, watchdogCheck(checker), func(err error) { log.Warn("systemd watchdog not notified", "err", err) })
		}
	}
	if cfg.metricsListen != "" {
		mln, err := net.Listen("tcp", cfg.metricsListen)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", met.Handler())
		mux.Handle("/healthz", checker.Handler())
		log.Info("serving metrics and health", "metrics", "http://"+mln.Addr().String()+"/metrics", "healthz", "http://"+mln.Addr().String()+"/healthz")
		errc := make(chan error, 1)
		go func() {
			errc <- serveHTTP(bgCtx, mln, func() time.Time { return time.Now().Add(time.Second) }, nil, mux, &cfg.http, log)
		}()
		defer func() {
			stopBackground()
			if merr := <-errc; merr != nil && err == nil {
				err = fmt.Errorf("--metrics-listen: %w", merr)
			}
		}()
	}
	if cfg.stdio {
		ready("stdio")
		// Requests that arrive after a signal are answered "shutting
		// down" until the mount's drain is over too, as the process exits
		// right after it.
		err := srv.ServeStdioDrain(ctx, os.Stdin, os.Stdout, drainMount)
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("stdio: %w", err)
		}
		return nil
	}
	// Refused handshakes and requests go to the audit log, then the log
	// (in that order: once the log line is out, the record is written).
	// Each refusal is counted; the audit log and the log get one record
	// per burst from an address, so a flood of bad credentials costs
	// neither the disk nor the fsyncs every call's record needs.
	bursts := auth.NewBursts(sinks{srv, logSink(log)}, 0)
	defer bursts.Close()
	sink := sinks{sinkFunc(func(_ context.Context, f auth.Failure) { met.AuthFailure(string(f.Stage)) }), bursts}
	handler, metricsHandler := observeHTTP(met, srv.Handler()), met.Handler()
	if ha.authn != nil {
		ha.authn.Sink = sink
		handler, metricsHandler = ha.authn.Middleware(handler), ha.authn.Middleware(metricsHandler)
	}
	// A signal: new calls are refused at once with a JSON-RPC error, the
	// ones in flight finish (the server's one shutdown, as over stdio).
	defer context.AfterFunc(ctx, srv.BeginShutdown)()
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.Admit(handler))
	mux.Handle("/upload/", srv.Admit(handler)) // raw uploads begun by guide_begin_upload
	mux.Handle(mcpserver.BackupPath, srv.Admit(handler))
	mux.Handle(mcpserver.ImportPath, srv.Admit(handler))
	mux.Handle(mcpserver.ExportPath, srv.Admit(handler))
	mux.Handle(mcpserver.ChangesPath, srv.Admit(handler)) // the change feed as Server-Sent Events
	mux.Handle(mcpserver.DAVPath, srv.Admit(handler))     // read-only WebDAV
	mux.Handle(mcpserver.LinkPath, srv.Admit(handler))    // resource links the read tools hand out
	mux.Handle("/metrics", metricsHandler)
	mux.Handle("/healthz", checker.Handler())
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	ln = mcpserver.LimitListener(ln, cfg.http.maxConnsPerAddr, log)
	scheme := "http"
	if ha.tls != nil {
		scheme = "https"
		ln = auth.NewListener(ln, ha.tls, &auth.ListenerOptions{Sink: sink, Logger: log})
	}
	// The listener accepts connections from here on (the kernel queues
	// them until Serve runs), so systemd may start what depends on it.
	ready(scheme+"://"+ln.Addr().String()+"/mcp", "auth", cfg.auth.methods())
	return serveHTTP(ctx, ln, stopBy, srv, mux, &cfg.http, log)
}

// notify sends states to systemd, logging a failure: a service manager
// that cannot hear depotfs is no reason to stop serving.
func notify(log *slog.Logger, n *sdnotify.Notifier, states ...string) {
	if err := n.Notify(states...); err != nil {
		log.Warn("systemd notification failed", "err", err)
	}
}

// serveHTTP serves mux on ln until ctx is done (the server's Close, run when
// ctx ends, ends its notification streams), then waits until stopBy for
// the requests dr admitted to finish (dr, when not nil, refuses new ones
// from ctx's end on, with the listener still open so that callers hear
// why), then stops accepting connections and waits for the rest, until
// stopBy too.
func serveHTTP(ctx context.Context, ln net.Listener, stopBy func() time.Time, dr drainer, mux http.Handler, hc *httpConfig, log *slog.Logger) error {
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: hc.readHeaderTimeout,
		IdleTimeout:       hc.idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return fmt.Errorf("http: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithDeadline(context.Background(), stopBy())
	defer cancel()
	if dr != nil {
		dr.BeginShutdown()
		log.Info("shutting down: refusing new calls, finishing those in flight", "in_flight", dr.InFlight(), "until", stopBy().Format(time.RFC3339Nano))
		if err := dr.Shutdown(sctx); err != nil {
			log.Warn("in-flight calls did not finish in time", "err", err)
		}
	}
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("in-flight calls did not finish in time", "err", err)
		return hs.Close()
	}
	return nil
}

// drainer is the shutdown of the MCP server's transports
// (*mcpserver.Server), as serveHTTP drives it.
type drainer interface {
	BeginShutdown()
	InFlight() int
	Shutdown(ctx context.Context) error
}

// lockedAdvice explains a database held by another process and what to
// do about it: an MCP client that starts depotfs over stdio while the
// service runs otherwise sees only that the process exited.
func lockedAdvice(locked *bolt.LockedError, err error) error {
	stop := "stop that process"
	if locked.PID != 0 {
		stop = fmt.Sprintf("stop that process (kill %d; 'systemctl stop depotfs' if it is the service)", locked.PID)
	}
	return fmt.Errorf("open database: %w\n"+
		"Only one process may open a depotfs database at a time. Either %s, "+
		"or use the running server instead of starting another: point the MCP client at its HTTP endpoint "+
		"(an MCP client that launches 'depotfs serve --stdio' cannot share its database), 'depotfs status' asks it for statistics; "+
		"or give this one its own --db", err, stop)
}
