package nats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/keylock"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Defaults for Options.
const (
	DefaultPrefix        = "depot"
	DefaultReplicas      = 3
	DefaultMaxChunkSize  = 1 << 20
	DefaultInlineBytes   = 16 << 10
	DefaultCacheBytes    = 64 << 20
	DefaultHistory       = 4096
	DefaultSweepInterval = time.Second
	DefaultUploadTimeout = time.Hour
	DefaultGCDelay       = 10 * time.Minute
	DefaultMaxBatch      = 10000
	DefaultTimeout       = 10 * time.Second
	DefaultWriteTimeout  = 30 * time.Second
)

// Options configure a Store. The zero value works: bucket prefix "depot",
// replicas 3, no size limits.
type Options struct {
	// Prefix starts the names of the depot's bucket and stream, so that
	// several depots can share a cluster: <Prefix>-tree (a KV bucket) and
	// <Prefix>-chunks (a stream). Letters, digits, '-' and '_'.
	Prefix string
	// Replicas is the replication of both; every host of one depot must
	// agree. The servers must run with sync_interval: always (see the
	// package doc).
	Replicas int

	// MaxStoreBytes and MaxFileBytes are the size limits, as in
	// store.Stats; 0 means none. Every host of one depot should agree.
	MaxStoreBytes int64
	MaxFileBytes  int64
	// Quotas bound the stored bytes charged to prefixes, as in
	// store/bolt's Options; each host counts them from the records it
	// applies. Every host of one depot should agree.
	Quotas []store.Quota

	// MaxChunkSize bounds the chunks content is stored in; the store uses
	// the largest power of two that is at most this and fits the servers'
	// max_payload with room for headers.
	MaxChunkSize int
	// CacheBytes bounds this host's memory cache of chunks.
	CacheBytes int64
	// History is the number of events kept in memory for Watch.
	History int
	// SweepInterval is how often this host looks for expired entries and
	// for dropped content whose chunks may be deleted.
	SweepInterval time.Duration
	// UploadTimeout is how long a chunked upload may stay idle.
	UploadTimeout time.Duration
	// InlineBytes is the largest content stored in the tree bucket itself
	// rather than as chunks (one replicated write instead of two, and
	// every host receives it with the tree); negative: none. At most the
	// chunk size.
	InlineBytes int64
	// GCDelay is how long the chunks of dropped content are kept, so a
	// Content opened on another host before the drop can still read them.
	GCDelay time.Duration
	// ChunkGrace is how old chunks no record references must be before
	// the sweeper deletes them as leaked (SweepChunks): longer than any
	// host takes between writing content's chunks and committing it.
	ChunkGrace time.Duration
	// MaxBatch is the most records one change may write: it is committed
	// as one atomic batch, so the servers must accept batches that large
	// (jetstream { limits { batch { max_msgs } } }, 1000 unless set; see
	// docs/several-hosts.md). A new small file takes three records (its
	// entry, its content record and its bytes). A larger change fails
	// with store.ErrBatchLimit and changes nothing.
	MaxBatch int
	// Timeout bounds each request to the servers.
	Timeout time.Duration
	// WriteTimeout bounds a write from its call to its answer, however
	// often it is sent again or waits for the cluster to elect a leader
	// or regain its quorum: a write not committed by then fails with
	// store.ErrUnavailable.
	WriteTimeout time.Duration
	// KeepVersions is how many superseded versions of each path are kept
	// besides the live one (store.Versions); 0 keeps none, and then only
	// snapshots retain versions. Every host of one depot should agree.
	KeepVersions int

	// Settings are values every host of the depot must share, by name
	// (the size limits, expiry times: whatever the caller enforces on the
	// depot), as the caller shows them. The first host to open the depot
	// records them in the cluster; a host whose values differ fails Open
	// with ErrSettingsDiffer naming both, unless ResetSettings is set:
	// then its values replace the recorded ones.
	Settings      map[string]string
	ResetSettings bool

	// Depot is the id of the depot this host served before (Store.Depot;
	// keep it with the host's local state), "" for a host that never
	// served one. Open fails with ErrOtherDepot when the cluster holds
	// another depot under the prefix, and, unless Create allows it, with
	// ErrNoDepot when it holds none: a host that reaches the wrong
	// servers must not serve an empty depot in place of its own.
	Depot string
	// Create says when Open may create the depot in a cluster that holds
	// none; the zero value, CreateFirst, only for a host that never
	// served one.
	Create CreateMode
	// FirstRevision, when Open creates the depot, makes its revisions
	// start above it (the tree stream's first sequence is FirstRevision
	// plus one), so a depot loaded from an export continues above every
	// revision the lost depot can have handed out. A depot that exists is
	// bound as it is: JetStream cannot raise the sequence of a stream that
	// holds messages without deleting them.
	FirstRevision uint64

	// ViewCache is a file where this host keeps a copy of its view of
	// the tree, written now and then and when the store closes, so that
	// an Open reads only what changed since (see viewcache.go); "" keeps
	// none, and every Open reads the whole tree bucket. It is this host's
	// own, like Depot. A store with a Key keeps none.
	ViewCache string

	// Key is the key-encryption key of a sealed depot: every host of a
	// sealed depot must hold the key that wraps its data key, and a depot
	// created by a host with a key is sealed (content, inline content and
	// uploads' chunks; see package seal) and names content by keyed
	// addresses. nil keeps content in the clear and is refused by a
	// sealed depot.
	Key seal.Wrapper
	// plainAddresses makes a depot created with a Key name content by
	// its plain hash (a version 1 seal record), as builds before keyed
	// addresses did: for tests of such depots only.
	plainAddresses bool

	Now    func() time.Time
	Logger *slog.Logger
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Store is the NATS JetStream implementation of store.Store. It is safe
// for concurrent use; several Stores, on several hosts, may share one
// depot. Remove, Copy, Move, Declare, CreateSnapshot and DeleteSnapshot
// are the shared write rules, each committed as one atomic batch (as
// store.Store documents them; a snapshot's release may take several).
type Store struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	opts   Options
	log    *slog.Logger
	bucket string // the tree KV bucket
	host   string // this Store's random id, for its marker key
	tree   jetstream.Stream

	chunkSize int
	chunks    *chunkStore
	view      view
	uses      uses
	uploads   keylock.Locks
	consMu    sync.Mutex
	cons      jetstream.ConsumeContext

	wlock     chan struct{} // holds a token while a transaction runs: one at a time on this host
	qmu       sync.Mutex    // guards queue
	queue     []*job        // calls waiting to be committed (see attempt)
	closed    atomic.Bool
	done      chan struct{}
	closeOnce sync.Once
	goMu      sync.Mutex
	wg        sync.WaitGroup
	open      openBlobs
	catchUp   catchUp
	// viewCache is Options.ViewCache, "" when this store keeps none;
	// viewCacheMu is held by the one write of it in flight. loadedFrom is
	// the sequence of the view cache Open loaded, 0 for none.
	viewCache   string
	viewCacheMu sync.Mutex
	loadedFrom  uint64
	treeCreated time.Time  // when the tree stream was created (the view cache's check)
	pullMu      sync.Mutex // held by the one pull in flight (see waitApplied)
	writes
}

var _ store.Store = (*Store)(nil)

// Open connects a Store to the depot in the cluster nc is connected to,
// creating its bucket and stream if they do not exist, and returns once
// this host has read the whole tree. The caller keeps ownership of nc and
// closes it after the Store.
func Open(ctx context.Context, nc *nats.Conn, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Replicas < 0 || o.MaxStoreBytes < 0 || o.MaxFileBytes < 0 || o.MaxChunkSize < 0 || o.CacheBytes < 0 ||
		o.History < 0 || o.SweepInterval < 0 || o.UploadTimeout < 0 || o.GCDelay < 0 || o.ChunkGrace < 0 || o.MaxBatch < 0 || o.Timeout < 0 || o.WriteTimeout < 0 || o.KeepVersions < 0 {
		return nil, fmt.Errorf("nats: open: %w: negative option", fs.ErrInvalid)
	}
	o.Prefix = cmp.Or(o.Prefix, DefaultPrefix)
	if !prefixRE.MatchString(o.Prefix) {
		return nil, fmt.Errorf("nats: open: %w: prefix %q: use 1 to 64 letters, digits, '-' or '_'", fs.ErrInvalid, o.Prefix)
	}
	o.Replicas = cmp.Or(o.Replicas, DefaultReplicas)
	o.MaxChunkSize = cmp.Or(o.MaxChunkSize, DefaultMaxChunkSize)
	o.History = cmp.Or(o.History, DefaultHistory)
	o.MaxBatch = cmp.Or(o.MaxBatch, DefaultMaxBatch)
	o.SweepInterval = cmp.Or(o.SweepInterval, DefaultSweepInterval)
	o.UploadTimeout = cmp.Or(o.UploadTimeout, DefaultUploadTimeout)
	o.GCDelay = cmp.Or(o.GCDelay, DefaultGCDelay)
	o.ChunkGrace = cmp.Or(o.ChunkGrace, DefaultChunkGrace)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.WriteTimeout = cmp.Or(o.WriteTimeout, DefaultWriteTimeout)
	o.CacheBytes = cmp.Or(o.CacheBytes, DefaultCacheBytes)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.InlineBytes = max(cmp.Or(o.InlineBytes, DefaultInlineBytes), 0) // negative: none
	if o.Now == nil {
		o.Now = time.Now
	}
	// An acknowledgement lost with a server is waited for no longer than
	// one request: the chunk is then sent again (see chunkWriter.wait).
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(requestTimeout))
	if err != nil {
		return nil, fmt.Errorf("nats: open: %w", err)
	}
	qs, qerr := quota.New(o.Quotas)
	if qerr != nil {
		return nil, fmt.Errorf("nats: open: %w: %w", fs.ErrInvalid, qerr)
	}
	s := &Store{
		nc: nc, js: js, opts: o, log: o.Logger,
		bucket: o.Prefix + "-tree", host: nuid.Next(),
		done:  make(chan struct{}),
		wlock: make(chan struct{}, 1),
	}
	s.chunkSize = chunkSizeFor(o.MaxChunkSize, nc.MaxPayload())
	s.opts.InlineBytes = min(s.opts.InlineBytes, int64(s.chunkSize))
	s.open.n = make(map[string]int)
	s.writes = writes{C: committer{s}}
	s.uses.init()
	s.view.st = newState()
	s.view.st.quota, s.view.st.charged = qs, qs.Zero()
	s.view.uses = &s.uses
	if err := s.setup(ctx); err != nil {
		s.stop()
		return nil, fmt.Errorf("nats: open %s: %w", o.Prefix, err)
	}
	s.wg.Go(s.sweeper)
	s.wg.Go(s.watchdog)
	if s.viewCache != "" {
		// From the file's sequence: a host that read the whole tree
		// writes the file soon, even if nothing changes afterwards.
		from := s.loadedFrom
		s.wg.Go(func() { s.viewCacher(from) })
	}
	return s, nil
}

// chunkSizeFor is the largest power of two up to max that fits in a
// message of maxPayload bytes with room for headers.
func chunkSizeFor(max int, maxPayload int64) int {
	size := 1
	for size*2 <= max && int64(size*2)+chunkHeadroom <= maxPayload {
		size *= 2
	}
	return size
}

// chunkHeadroom is what a chunk message leaves of the server's
// max_payload for headers.
const chunkHeadroom = 4 << 10

// setup creates or binds the bucket and the stream, starts the consumer
// and waits until the view has read the whole tree. Each step but the
// reading is bounded by Timeout; the reading, by its progress (readTree).
func (s *Store) setup(outer context.Context) error {
	ctx, cancel := context.WithTimeout(outer, s.opts.Timeout)
	defer cancel()
	exists, err := s.treeExists(ctx)
	if err != nil {
		return err
	}
	if !exists {
		if err := s.mayCreate(); err != nil {
			return err
		}
		if err := s.createTree(ctx); err != nil {
			return fmt.Errorf("tree bucket: %w", err)
		}
	}
	// An existing bucket is bound as it is, never updated: the bucket's
	// config cannot say "atomic batches allowed", so an update by a host
	// or a tool (export, import) opening the depot turned them off on the
	// live stream until the update below, and running hosts' writes
	// failed meanwhile ("atomic publish is disabled").
	tree, err := s.js.Stream(ctx, "KV_"+s.bucket)
	if err != nil {
		return fmt.Errorf("tree bucket: %w", err)
	}
	if cfg := tree.CachedInfo().Config; !cfg.AllowAtomicPublish {
		cfg.AllowAtomicPublish = true
		err := retry(ctx, func() (err error) {
			tree, err = s.js.UpdateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNotFound) && !exists {
				// The bucket this Open just created and found: a
				// server that does not know it yet answered (seen on
				// a loaded cluster), and one that does will.
				return fmt.Errorf("%w: %w", nats.ErrNoResponders, err)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("tree bucket: allowing atomic batches: %w", err)
		}
	}
	s.tree = tree
	s.chunks = newChunks(s.js, s.opts.Prefix+"-chunks", s.opts.CacheBytes, s.opts.Timeout, s.opts.WriteTimeout)
	s.view.st.cache = &s.chunks.cache
	// The key first: in a depot with keyed addresses the tree's records
	// cannot be read without it.
	sealed, err := s.readSeal(ctx)
	if err != nil {
		return err
	}
	info, err := tree.Info(ctx)
	if err != nil {
		return fmt.Errorf("tree bucket: %w", err)
	}
	last := info.State.LastSeq
	s.treeCreated = info.Created
	// What the view reads up to last is the tree as it was, not history
	// for watchers (see view.apply).
	s.view.hub.Init(s.opts.History, 0)
	s.view.history = s.opts.History
	s.view.done = s.done
	s.view.openSeq = last
	if info.State.Msgs == 0 {
		// An empty tree has nothing to read up to last, which is not 0
		// when the depot was created with a FirstRevision.
		s.view.mu.Lock()
		s.view.st.rev = last
		s.view.mu.Unlock()
	}
	if !sealed && s.opts.Key == nil {
		s.viewCache = s.opts.ViewCache
	}
	from := uint64(1)
	if r := s.loadViewCache(ctx, info); r > 0 {
		from = r + 1
	}
	if err := s.follow(ctx, from); err != nil {
		return err
	}
	if err := s.readTree(outer, last); err != nil {
		return fmt.Errorf("reading the tree: %w", err)
	}
	ctx, cancel = context.WithTimeout(outer, s.opts.Timeout)
	defer cancel()
	// Nothing else is created or recorded before the depot is known to
	// be this host's.
	if err := s.identify(ctx, !exists); err != nil {
		return err
	}
	if err := s.agree(ctx); err != nil {
		return err
	}
	if !sealed {
		if err := s.unseal(ctx, !exists); err != nil {
			return err
		}
	}
	return s.chunks.create(ctx, s.opts.Replicas)
}

// readTree waits until the view has applied the tree stream up to
// sequence last, for as long as it moves: it fails once the view applied
// nothing for Timeout. A depot of many files takes longer to read than
// any one request's time limit; bounded by Timeout as a whole, a host
// whose read took longer failed, and started over at every attempt (a
// restart at 100,000 files on a loaded machine never served).
func (s *Store) readTree(ctx context.Context, last uint64) error {
	for {
		before := s.view.applied()
		wctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
		err := s.view.waitFor(wctx, last)
		cancel()
		if err == nil || ctx.Err() != nil || s.view.applied() == before {
			return err
		}
	}
}

// follow (re)starts the ordered consumer that feeds the view, from stream
// sequence from.
func (s *Store) follow(ctx context.Context, from uint64) error {
	cons, err := s.tree.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$KV." + s.bucket + ".>"},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    from,
	})
	if err != nil {
		return fmt.Errorf("tree bucket: consumer: %w", err)
	}
	gen := s.view.restart()
	// Short pulls with frequent heartbeats: a consumer whose server died
	// notices within a second and starts again on another (writes wait
	// for this host to apply their own change).
	cc, err := cons.Consume(func(m jetstream.Msg) { s.view.deliver(gen, m) }, jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		s.log.Warn("nats: following the tree bucket", "err", err)
	}), jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		return fmt.Errorf("tree bucket: consumer: %w", err)
	}
	s.consMu.Lock()
	defer s.consMu.Unlock()
	if s.closed.Load() {
		// Closed while it was created (the watchdog restarts it on its
		// own goroutine): stop already stopped the one before.
		cc.Stop()
		return store.ErrClosed
	}
	s.cons = cc
	return nil
}

// watchdogTick is how often the watchdog compares the view with the
// stream (see watchdog).
const watchdogTick = 250 * time.Millisecond

// watchdog keeps the view up with the stream when the consumer does not:
// a view behind the stream whose consumer delivered nothing for a tick
// reads the missing messages from the stream's leader
// (catchUpFromLeader), and a consumer silent for consumerIdle ticks while
// the view was behind is started again, off the watchdog's goroutine (its
// creation waits for the meta layer's leader). The ordered consumer
// recovers from a lost server by itself, but only once the meta layer can
// create it again: seconds after the stream's election when one server
// led both.
func (s *Store) watchdog() {
	t := time.NewTicker(watchdogTick)
	defer t.Stop()
	idleFor := 0
	var restarting atomic.Bool
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		info, err := s.tree.Info(ctx)
		cancel()
		if err != nil {
			continue
		}
		last := info.State.LastSeq
		if s.view.applied() >= last {
			idleFor = 0
			continue
		}
		if time.Since(s.view.lastDelivery()) < watchdogTick {
			idleFor = 0
			continue
		}
		s.catchUpFromLeader(last)
		if idleFor++; idleFor < consumerIdle || !restarting.CompareAndSwap(false, true) {
			continue
		}
		idleFor = 0
		s.log.Warn("nats: this host's consumer of the tree bucket delivers nothing; following it again", "applied", s.view.applied(), "last", last)
		if s.start(context.Background(), func() {
			defer restarting.Store(false)
			s.consMu.Lock()
			s.cons.Stop()
			s.consMu.Unlock()
			// A short attempt: during an election the request may go
			// unanswered, and a later tick tries again.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := s.follow(ctx, s.view.applied()+1); err != nil {
				s.log.Warn("nats: following the tree bucket again", "err", err)
			}
		}) != nil {
			return
		}
	}
}

// consumerIdle is how many watchdog ticks a consumer may deliver nothing
// while the view is behind before it is started again.
const consumerIdle = 4

// catchUpFromLeader reads the messages up to sequence last that the
// consumer has not delivered from the stream's leader, as a writer
// waiting for its own change does (see waitApplied): a consumer whose
// server died can only be created again once the meta layer has a leader,
// seconds after the stream's election when one server led both, and
// meanwhile this host's readers and watchers would see nothing of the
// other hosts' writes. One pull at a time.
func (s *Store) catchUpFromLeader(last uint64) {
	if !s.pullMu.TryLock() {
		return
	}
	defer s.pullMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	for s.view.applied() < last && ctx.Err() == nil {
		before := s.view.applied()
		if err := s.pull(ctx, last); err != nil || s.view.applied() == before {
			return
		}
	}
}

// subject is the tree bucket subject of a key.
func (s *Store) subject(key string) string { return "$KV." + s.bucket + "." + key }

// stop ends the consumer and the goroutines.
func (s *Store) stop() {
	s.goMu.Lock()
	s.closed.Store(true)
	close(s.done)
	s.goMu.Unlock()
	s.consMu.Lock()
	if s.cons != nil {
		s.cons.Stop()
	}
	s.consMu.Unlock()
	s.wg.Wait()
}

// Close stops the store: watchers' channels are closed and later calls fail
// with store.ErrClosed. It does not close the connection. It is
// idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		// Wait for a transaction in flight.
		s.wlock <- struct{}{}
		<-s.wlock
		if _, err := s.writeViewCache(); err != nil {
			s.log.Warn("nats: writing this host's view cache", "err", err)
		}
	})
	return nil
}

// Revision returns the revision of the last change to an entry this host
// has applied. Records that are not entries (content, uploads, counters)
// take stream sequences too, so revisions increase but skip numbers.
func (s *Store) Revision(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	s.view.mu.RLock()
	defer s.view.mu.RUnlock()
	return s.view.st.entryRev, nil
}

// Sync waits until this host has applied every change committed, by any
// host, before the call: reads after it see them. It costs one round trip
// to the servers.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	last, err := s.lastSeq(ctx)
	if err != nil {
		return fmt.Errorf("nats: sync: %w", err)
	}
	return s.waitApplied(ctx, last)
}

// Stats returns the counts as this host has applied them. Hits and Misses
// are this host's since it opened the store.
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx); err != nil {
		return store.Stats{}, err
	}
	s.view.mu.RLock()
	st := s.view.st
	out := store.Stats{
		Files: st.counts.Files, Placeholders: st.counts.Placeholders, Dirs: st.counts.Dirs,
		StoredBytes: st.stored, LogicalBytes: st.counts.Logical, Blobs: st.nblobs,
		Uploads: st.nuploads, UploadBytes: st.uploadBytes,
		Evictions: st.counters.Evictions, EvictedBytes: st.counters.EvictedBytes, Expiries: st.counters.Expiries,
		SweptChunks: st.counters.SweptChunks,
		Versions:    st.nversions(), HeldBytes: st.held, Snapshots: int64(len(st.snaps)), DirTimes: int64(len(st.dtKeys)),
		MaxStoreBytes: s.opts.MaxStoreBytes, MaxFileBytes: s.opts.MaxFileBytes,
	}
	s.view.mu.RUnlock()
	out.Hits, out.Misses = s.uses.hits.Load(), s.uses.misses.Load()
	return out, nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

func (s *Store) now() time.Time { return s.opts.Now().UTC().Round(0) }

// Ping returns nil when the cluster can commit a write to the depot now,
// an error otherwise. It proposes a change to the tree stream that needs
// the stream's quorum exactly as a commit does, and that changes nothing:
// the purge of a subject nothing is ever written to. A stream leader
// answers it only once a majority of the stream's servers stored it, so a
// leader cut off from its peers (which still answers stream info) fails
// it. depotfs serve's /healthz and systemd watchdog call it. It is safe
// for concurrent use.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := s.tree.Purge(ctx, jetstream.WithPurgeSubject(s.subject(keyPing))); err != nil {
		return fmt.Errorf("nats: ping: the tree stream cannot commit: %w", err)
	}
	return nil
}

// limits are the size limits check applies.
func (s *Store) limits() check.Limits {
	return check.Limits{MaxFileBytes: s.opts.MaxFileBytes, MaxStoreBytes: s.opts.MaxStoreBytes, KeepVersions: s.opts.KeepVersions, MaxRecords: s.opts.MaxBatch}
}
