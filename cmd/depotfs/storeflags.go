package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
	natsstore "github.com/depotfs/depotfs/store/nats"
	"github.com/nats-io/nats.go"
)

// storeConfig chooses the store: the embedded bbolt file (--db) or a depot
// shared by several hosts on a NATS JetStream cluster.
type storeConfig struct {
	url                    string
	creds                  string
	tlsCA, tlsCert, tlsKey string
	prefix                 string
	wait                   time.Duration
	writeTimeout           time.Duration
	maxBatch               int
	resetSettings          bool
	create                 bool
	servers                []string // --store's servers, once validated
}

// defaultNATSWait is how long serve waits, by default, for the NATS
// cluster to take the depot: longer than servers started at the same time
// as depotfs need to elect their leaders, short enough that a wrong
// address shows up in the service's state within minutes.
const defaultNATSWait = 3 * time.Minute

func (c *storeConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.url, "store", "bolt", "where the depot lives: `bolt` (the --db file) or nats://host:port[,host:port...] (each may repeat nats://; a NATS JetStream cluster shared by several hosts, see docs/several-hosts.md)")
	fs.StringVar(&c.creds, "nats-creds", "", "NATS credentials `file` (JWT and nkey seed) for --store nats://")
	fs.StringVar(&c.tlsCA, "nats-tls-ca", "", "CA certificate `file` that signed the NATS servers' certificates; with it the connection uses TLS")
	fs.StringVar(&c.tlsCert, "nats-tls-cert", "", "client certificate `file` for NATS servers that require one (with --nats-tls-key)")
	fs.StringVar(&c.tlsKey, "nats-tls-key", "", "private key `file` of --nats-tls-cert")
	fs.DurationVar(&c.wait, "nats-wait", defaultNATSWait, "how long serve waits at start for the NATS cluster to accept connections and serve the depot (servers started at the same time elect their leaders first), logging what it waits for; 0: fail at once")
	fs.DurationVar(&c.writeTimeout, "nats-write-timeout", natsstore.DefaultWriteTimeout, "how long a write (and an open, listing or lookup catching up with the cluster) may wait for the NATS cluster, through an election or a quorum loss, before it fails with a retryable error; keep it longer than an election (4-9 s); 0: the default")
	fs.IntVar(&c.maxBatch, "nats-max-batch", natsstore.DefaultMaxBatch, "most `records` one change may write (a new small file takes 3): the NATS servers' jetstream { limits { batch { max_msgs } } } must allow as many; 0: the default")
	fs.BoolVar(&c.resetSettings, "nats-reset-settings", false, "make this host's --max-store-size, --max-file-size, --upload-timeout and --upload-ttl the depot's: every host of a NATS depot must start with the values the first one recorded in the cluster, or it refuses to start; then restart the other hosts with them")
	fs.BoolVar(&c.create, "nats-create", false, "create a new, empty depot when the NATS cluster holds none under --nats-prefix, although this host served one (recorded beside --db): without it such a host refuses to start, since its servers lost the depot or --store reaches other servers; a host that never served a depot creates one without it")
	fs.StringVar(&c.prefix, "nats-prefix", natsstore.DefaultPrefix, "`prefix` of the depot's bucket and stream names, so several depots can share one NATS cluster (letters, digits, - and _)")
}

// validate checks the flags without connecting anywhere.
func (c *storeConfig) validate() error {
	if c.url == "bolt" {
		if c.creds != "" || c.tlsCA != "" || c.tlsCert != "" || c.tlsKey != "" || c.create {
			return errors.New("--nats-creds, --nats-tls-* and --nats-create apply only with --store nats://")
		}
		return nil
	}
	rest, ok := strings.CutPrefix(c.url, "nats://")
	if !ok || rest == "" {
		return fmt.Errorf("--store %q: want bolt or nats://host:port[,host:port...]", c.url)
	}
	c.servers = nil
	for _, hp := range strings.Split(rest, ",") {
		hp = strings.TrimPrefix(hp, "nats://")
		u, err := url.Parse("nats://" + hp)
		if err != nil || u.Host == "" || u.Port() == "" || u.Path != "" || u.User != nil {
			return fmt.Errorf("--store %q: %q is not host:port", c.url, hp)
		}
		c.servers = append(c.servers, "nats://"+u.Host)
	}
	if err := cmp.Or(
		failIf(c.maxBatch < 0, "--nats-max-batch %d: want 1 or more (0: the default)", c.maxBatch),
		failIf(c.wait < 0, "--nats-wait %v: want 0 or more", c.wait),
		failIf(c.writeTimeout < 0, "--nats-write-timeout %v: want 0 or more (0: the default)", c.writeTimeout),
		failIf((c.tlsCert == "") != (c.tlsKey == ""), "--nats-tls-cert and --nats-tls-key go together"),
	); err != nil {
		return err
	}
	for _, f := range []string{c.creds, c.tlsCA, c.tlsCert, c.tlsKey} {
		if _, err := os.Stat(f); f != "" && err != nil {
			return fmt.Errorf("NATS credentials: %w", err)
		}
	}
	return nil
}

// depot is what serve needs of a store: both stores are one.
type depot interface {
	store.Store
	pinger
}

// openStore opens the configured store; close releases it (and the NATS
// connection). exchange, for a NATS store, shares demand-fetch requests
// with the other hosts.
func openStore(ctx context.Context, cfg serveConfig, kek seal.Wrapper, log *slog.Logger) (st depot, exchange fetch.Exchange, close func() error, err error) {
	// The --db directory holds the audit log and keys with either store.
	if err := os.MkdirAll(filepath.Dir(cfg.db), 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("database directory: %w", err)
	}
	if cfg.store.url == "bolt" {
		b, err := bolt.Open(cfg.db, &bolt.Options{
			UploadTimeout: cfg.uploadTimeout, Logger: log, KeepVersions: cfg.settings.KeepVersions, History: cfg.feedHistory,
			MaxStoreBytes: int64(cfg.maxStoreSize), MaxFileBytes: int64(cfg.maxFileSize), Quotas: cfg.quotas,
			Upgrade: true, // serve upgrades an older database, keeping a copy of it
			Key:     kek, ResealRate: int64(cfg.resealRate),
		})
		if err != nil {
			if locked, ok := errors.AsType[*bolt.LockedError](err); ok {
				return nil, nil, nil, lockedAdvice(locked, err)
			}
			return nil, nil, nil, fmt.Errorf("open database: %w", err)
		}
		return b, nil, b.Close, nil
	}
	c := cfg.store
	opts := []nats.Option{
		nats.Name("depotfs"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(100 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS connection lost", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }),
	}
	record := depotRecordPath(cfg.db, c.prefix)
	served, err := readDepotRecord(record)
	if err != nil {
		return nil, nil, nil, err
	}
	create := natsstore.CreateFirst
	if c.create {
		create = natsstore.CreateAlways
	}
	s, closeNATS, err := waitForDepot(ctx, c, opts, &natsstore.Options{
		Prefix: c.prefix, UploadTimeout: cfg.uploadTimeout, Logger: log, MaxBatch: c.maxBatch, WriteTimeout: c.writeTimeout,
		Settings: sharedSettings(cfg), ResetSettings: c.resetSettings,
		MaxStoreBytes: int64(cfg.maxStoreSize), MaxFileBytes: int64(cfg.maxFileSize), KeepVersions: cfg.settings.KeepVersions,
		History: cfg.feedHistory, Depot: served, Create: create, Quotas: cfg.quotas, Key: kek,
		ViewCache: viewCachePath(cfg.db, c.prefix),
	}, log)
	if err != nil {
		return nil, nil, nil, depotAdvice(err, record)
	}
	if id := s.Depot(); id != served {
		// Recorded before serving: from now on this host refuses any
		// other depot.
		if err := writeDepotRecord(record, depotRecord{Depot: id, Prefix: c.prefix, Store: c.url, Recorded: time.Now().UTC()}); err != nil {
			closeNATS()
			return nil, nil, nil, err
		}
		log.Info("this host serves the NATS depot", "depot", id, "prefix", c.prefix, "record", record)
	}
	ex, err := s.Requests(ctx)
	if err != nil {
		closeNATS()
		return nil, nil, nil, err
	}
	return s, ex, closeNATS, nil
}

// waitForDepot connects to the NATS cluster and opens the depot, trying
// again until --nats-wait runs out: servers started with depotfs (a boot,
// a cluster restarted as a whole) accept connections, then elect the
// JetStream leaders, some seconds later. What it waits for is logged.
// It returns the store and how to close it and the connection. opts add
// to the connection's options; the credentials and TLS flags in c are
// applied here, for every command that opens a NATS depot.
func waitForDepot(ctx context.Context, c storeConfig, opts []nats.Option, so *natsstore.Options, log *slog.Logger) (*natsstore.Store, func() error, error) {
	deadline := time.Now().Add(c.wait)
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := c.connect(opts)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	var logged time.Time
	waiting := func(what string, err error) {
		if time.Since(logged) < natsWaitLogEvery {
			return
		}
		logged = time.Now()
		log.Info("waiting for the NATS cluster", "for", what, "servers", c.url, "waited", time.Since(start).Round(time.Second), "wait", c.wait, "err", err)
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		var err error
		if nc.IsConnected() {
			var s *natsstore.Store
			s, err = natsstore.Open(ctx, nc, so)
			switch {
			case errors.Is(err, natsstore.ErrSettingsDiffer):
				nc.Close()
				return nil, nil, fmt.Errorf("open NATS store: %w, or make this host's the depot's with --nats-reset-settings", err)
			case errors.Is(err, seal.ErrNoKey), errors.Is(err, seal.ErrWrongKey), errors.Is(err, seal.ErrNotSealed):
				// The depot's seal record answers for good too.
				nc.Close()
				return nil, nil, fmt.Errorf("open NATS store: %w", err)
			case errors.Is(err, natsstore.ErrOtherDepot):
				// The id read from the cluster answers for good. A
				// cluster without the depot is waited for: one
				// restarting may not know its streams yet.
				nc.Close()
				return nil, nil, fmt.Errorf("open NATS store: %w", err)
			}
			if err == nil {
				if time.Since(start) > time.Second {
					log.Info("the NATS cluster serves the depot", "waited", time.Since(start).Round(time.Second))
				}
				return s, func() error { err := s.Close(); nc.Close(); return err }, nil
			}
			if errors.Is(err, natsstore.ErrNoDepot) {
				waiting("the depot this host served (the cluster holds none)", err)
			} else {
				waiting("JetStream to serve the depot (leaders elected)", err)
			}
		} else {
			err = nats.ErrNoServers
			waiting("a server to accept the connection", err)
		}
		select {
		case <-waitCtx.Done():
			nc.Close()
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("open NATS store %s: not ready within --nats-wait %v: %w", c.url, c.wait, err)
		case <-time.After(wait):
		}
	}
}

// connect connects to the NATS servers of --store with the credentials and
// TLS flags in c, added to opts. It returns at once, connected or not: the
// client keeps trying every server in the background.
func (c storeConfig) connect(opts []nats.Option) (*nats.Conn, error) {
	if c.creds != "" {
		opts = append(opts, nats.UserCredentials(c.creds))
	}
	if c.tlsCA != "" {
		opts = append(opts, nats.RootCAs(c.tlsCA))
	}
	if c.tlsCert != "" {
		opts = append(opts, nats.ClientCert(c.tlsCert, c.tlsKey))
	}
	opts = append(opts, nats.RetryOnFailedConnect(true))
	nc, err := nats.Connect(strings.Join(c.servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", c.url, err)
	}
	return nc, nil
}

// depotAdvice adds to an error opening a NATS depot what the operator
// can do when the cluster does not hold the depot this host served.
func depotAdvice(err error, record string) error {
	switch {
	case errors.Is(err, natsstore.ErrNoDepot):
		return fmt.Errorf("%w\ncheck that --store reaches the depot's servers; to start a new, empty depot, add --nats-create", err)
	case errors.Is(err, natsstore.ErrOtherDepot):
		return fmt.Errorf("%w\ncheck that --store and --nats-prefix name the depot's servers; to make this host serve the depot the cluster holds (after an import into a new cluster), remove %s", err, record)
	}
	return err
}

// natsWaitLogEvery spaces the log lines of waitForDepot.
const natsWaitLogEvery = 5 * time.Second

// sharedSettings are the flags every host of a NATS depot must agree on,
// as the store records them: the limits each host enforces on the one
// shared depot.
func sharedSettings(cfg serveConfig) map[string]string {
	return map[string]string{
		"--max-store-size": cfg.maxStoreSize.String(),
		"--max-file-size":  cfg.maxFileSize.String(),
		"--upload-timeout": cfg.uploadTimeout.String(),
		"--upload-ttl":     cfg.uploadTTL.String(),
		"--keep-versions":  strconv.Itoa(cfg.settings.KeepVersions),
		"--quota":          cfg.quotas.String(),
	}
}

// storeAttr names the store in the ready line: the database file, or the
// NATS depot (whose --db directory holds only the audit log and keys).
func storeAttr(cfg serveConfig) slog.Attr {
	if cfg.store.url == "bolt" {
		return slog.String("database", cfg.db)
	}
	return slog.String("store", cfg.store.url+" prefix "+cfg.store.prefix)
}
