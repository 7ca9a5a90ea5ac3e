package bolt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/keylock"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/depotfs/depotfs/store/internal/watchhub"
	bbolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Defaults applied to zero Options fields.
const (
	DefaultChunkSize     = 1 << 20
	DefaultUploadTimeout = time.Hour
	DefaultHistory       = 4096
	DefaultSweepInterval = time.Second
	DefaultFlushInterval = 10 * time.Second
)

// lockTimeout bounds how long Open waits for another process's lock on the
// database file before failing.
const lockTimeout = time.Second

// allocSize is how far bbolt grows the file past what a commit needs (its
// default is 16 MiB). 4 MiB cut the file for 30 MiB pushed from 71 to
// ~59 MiB at the cost of one more ftruncate and fsync per 4 MiB of growth.
// The freelist stays bbolt's default (array, synced): the hashmap freelist
// let the file grow further under churn, and NoFreelistSync saved little
// space while every Open must then scan the whole file (DESIGN.md).
const allocSize = 4 << 20

// mmapSize is the size bbolt maps the file at from the start (address
// space, not memory: only pages read or written are resident). bbolt
// otherwise remaps as the file grows, and each remap waits for every read
// transaction to end: a write that grows the file would wait for an online
// backup (one read transaction over the whole file) to finish. So the map
// is twice what the file can be expected to reach: the larger of its
// current size and the store's size limit, at least 1 GiB, at most 256
// GiB of address space. Only a depot outgrowing that remaps.
func mmapSize(path string, maxStoreBytes int64) int {
	const most = 256 << 30
	want := maxStoreBytes
	if fi, err := os.Stat(path); err == nil && fi.Size() > want {
		want = fi.Size()
	}
	return int(min(max(2*want, leastMmap), most))
}

// leastMmap is mmapSize's floor; a variable so that a test can watch a
// small file outgrow its map.
var leastMmap int64 = 1 << 30

// Options configures a Store. The zero value, and a nil *Options, give the
// defaults. Open copies the Options; changing them afterwards has no effect.
type Options struct {
	// ChunkSize is the size in bytes of the pieces a blob is stored in;
	// 0 means DefaultChunkSize. It applies to blobs written from now on:
	// each blob remembers the chunk size it was written with.
	ChunkSize int
	// UploadTimeout is how long a chunked upload may go without a new
	// chunk before it is deleted; 0 means DefaultUploadTimeout.
	UploadTimeout time.Duration
	// History is how many changes the change log keeps, in the file and
	// in memory, for Changes and Watch to resume from (after a restart
	// too); 0 means DefaultHistory.
	History int
	// Logger receives background errors (upload expiry, garbage
	// collection); nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock used for arrival times and upload expiry; nil means
	// time.Now.
	Now func() time.Time

	// MaxStoreBytes limits the stored content, each distinct content
	// counted once, plus the chunks of uploads in progress; a write or
	// chunk that would exceed it evicts the least recently used unpinned
	// content first. 0 means no limit.
	MaxStoreBytes int64
	// MaxFileBytes limits the size of one file; a larger write fails with
	// store.ErrLimit. 0 means no limit.
	MaxFileBytes int64

	// SweepInterval is how often the sweeper looks for expired files;
	// 0 means DefaultSweepInterval.
	SweepInterval time.Duration
	// KeepVersions is how many superseded versions of each path are kept
	// besides the live one (store.Versions); 0 keeps none, and then only
	// snapshots retain versions.
	KeepVersions int

	// Quotas bound the stored bytes charged to prefixes (see store.Quota);
	// a write that would take one over is refused with a
	// *store.QuotaError before it evicts anything. What each prefix is
	// charged is counted at Open (one pass over the tree, the versions and
	// the uploads) and kept by every write after.
	Quotas []store.Quota

	// FlushInterval is how often reads' uses (the LRU order) and hit and
	// miss counts are persisted when no write does it first; 0 means
	// DefaultFlushInterval. Close persists them too.
	FlushInterval time.Duration

	// ReadOnly opens an existing database for reading only: the file is
	// neither created nor upgraded nor changed in any way (no janitor,
	// no sweeper, reads' uses are not persisted), and writes fail. A
	// missing file is an error wrapping fs.ErrNotExist. A database of an
	// older schema is read as it is.
	ReadOnly bool
	// Upgrade lets Open upgrade a database of an older schema, after
	// copying it to UpgradeCopyPath; without it Open refuses one with
	// ErrUpgrade, since the depotfs that wrote it cannot read it after.
	Upgrade bool

	// Key is the key-encryption key of a sealed store: a new store opened
	// with it seals its content (see package seal), a sealed store
	// cannot be opened without it, and a store whose content is in the
	// clear refuses it. nil keeps content in the clear.
	Key seal.Wrapper
	// ResealRate bounds the bytes per second the resealer rewrites while
	// a reencryption (Reencrypt) is in progress; 0 means
	// DefaultResealRate.
	ResealRate int64

	// NoSync skips the fsync after each commit (bbolt's Options.NoSync):
	// a committed write then survives the process dying but not the
	// machine losing power. It is for tests and scratch stores whose
	// durability nobody relies on; a depot's store leaves it false.
	NoSync bool

	// usesPerFlush is how many uses one transaction persists; 0 means
	// the constant usesPerFlush. Only tests set it, to reach the bound
	// with a few hundred files rather than thousands.
	usesPerFlush int
	// batchBytes is how much content one staging transaction holds; 0
	// means the constant batchBytes. Only tests set it, to span several
	// transactions with a few MiB rather than tens.
	batchBytes int
}

// Store is the bbolt implementation of store.Store. A Store is safe for
// concurrent use by multiple goroutines. Remove, Copy, Move, Declare,
// CreateSnapshot and DeleteSnapshot are the shared write rules run in its
// transactions, each one transaction (as store.Store documents them).
type Store struct {
	db   *bbolt.DB
	lock *os.File // DB.lock, naming this process to a second opener
	opts Options
	log  *slog.Logger
	// oldCopy is the copy of the file kept before Open upgraded it, ""
	// when it did not.
	oldCopy string

	closed    atomic.Bool
	done      chan struct{} // closed by Close: stops the janitor and watchers
	closeOnce sync.Once
	closeErr  error
	goMu      sync.Mutex     // orders wg.Add of new watchers before Close's wg.Wait
	wg        sync.WaitGroup // the janitor, sweeper and watcher goroutines

	// wmu serializes write transactions with the publication of their
	// events, so the event history is in revision order.
	wmu   writeLock   // a channel of capacity 1; see commit.go
	queue commitQueue // writes waiting for wmu (group commit)
	skip  heldSkip    // where the held content of the live lru index ends; under wmu

	gc     gc
	sealer sealer // the data key of a sealed store; set by Open
	hub    watchhub.Hub
	// logFrom and logged are the change log as Open read it, for the hub.
	logFrom uint64
	logged  []store.Event
	uploads keylock.Locks
	uses    uses
	staged  stagedTotals
	quota   *quota.Set // Options.Quotas
	charged charged    // what quota's prefixes are charged as committed
	writes
	// commitErr is the error of the last commit when it failed, nil once
	// one succeeds (Writable reports it).
	commitErr atomic.Pointer[error]
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the store in the bbolt file at path (mode 0600). The
// parent directory must exist. If another process (or another Store in this
// one) holds the file, Open fails after about a second with an error
// wrapping bbolt's timeout error. A nil opts means the defaults. Open may be
// called concurrently; the Store it returns owns two goroutines, the upload
// janitor and the expiry sweeper, and while a reencryption is unfinished
// (Reencrypt) a third, the resealer, that Close stops.
//
// Open sweeps content left unreferenced by a crash; uploads in progress are
// kept and continue where they stopped. A database of an older schema is
// upgraded only with Options.Upgrade (see ErrUpgrade); with
// Options.ReadOnly nothing is created or changed.
func Open(path string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.ChunkSize < 0 || o.UploadTimeout < 0 || o.History < 0 || o.MaxStoreBytes < 0 || o.MaxFileBytes < 0 ||
		o.SweepInterval < 0 || o.FlushInterval < 0 || o.KeepVersions < 0 || o.ResealRate < 0 {
		return nil, fmt.Errorf("bolt: open: %w: negative option", fs.ErrInvalid)
	}
	if o.ChunkSize > maxChunkSize {
		return nil, fmt.Errorf("bolt: open: %w: chunk size over %d bytes", fs.ErrInvalid, maxChunkSize)
	}
	o.ChunkSize = cmp.Or(o.ChunkSize, DefaultChunkSize)
	o.UploadTimeout = cmp.Or(o.UploadTimeout, DefaultUploadTimeout)
	o.History = cmp.Or(o.History, DefaultHistory)
	o.SweepInterval = cmp.Or(o.SweepInterval, DefaultSweepInterval)
	o.FlushInterval = cmp.Or(o.FlushInterval, DefaultFlushInterval)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}

	qs, err := quota.New(o.Quotas)
	if err != nil {
		return nil, fmt.Errorf("bolt: open: %w: %w", fs.ErrInvalid, err)
	}
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("bolt: open: %w", err)
		}
	}
	o.usesPerFlush = cmp.Or(o.usesPerFlush, usesPerFlush)
	o.batchBytes = cmp.Or(o.batchBytes, batchBytes)
	db, lockFile, err := openLocked(path, &bbolt.Options{Timeout: lockTimeout, InitialMmapSize: mmapSize(path, o.MaxStoreBytes), ReadOnly: o.ReadOnly, NoSync: o.NoSync})
	if err != nil {
		return nil, fmt.Errorf("bolt: open: %w", err)
	}
	var oldCopy string
	if !o.ReadOnly {
		if oldCopy, err = prepareUpgrade(db, path, o.Upgrade); err != nil {
			db.Close()
			lockFile.Close()
			return nil, fmt.Errorf("bolt: open %s: %w", path, err)
		}
	}
	db.AllocSize = allocSize
	s := &Store{
		db:    db,
		lock:  lockFile,
		opts:  o,
		log:   o.Logger,
		done:  make(chan struct{}),
		wmu:   make(writeLock, 1),
		quota: qs,
	}
	s.gc.open = make(map[hash]int)
	s.writes = writes{C: committer{s}}
	init := s.init
	if o.ReadOnly {
		init = s.initReadOnly
	}
	rev, err := init()
	if err != nil {
		db.Close()
		lockFile.Close()
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	s.hub.Init(o.History, rev)
	s.hub.Restore(s.logFrom, s.logged)
	s.logged = nil
	s.oldCopy = oldCopy
	if oldCopy != "" {
		s.log.Warn("database upgraded to the current schema; the file as it was is kept for the depotfs that wrote it: remove it once the upgraded depot is trusted", "db", path, "old_copy", oldCopy)
	}

	if !o.ReadOnly {
		s.wg.Go(s.janitor)
		s.wg.Go(s.sweeper)
		if s.Resealing() {
			s.wg.Go(s.resealer)
		}
	}
	return s, nil
}

// Close stops the upload janitor and the sweeper, closes every Watch
// channel, persists the uses and counts reads left in memory, and closes
// the database. Contents still open fail their reads with store.ErrClosed.
// Close is idempotent and safe to call concurrently with other methods,
// which then fail with store.ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.goMu.Lock()
		s.closed.Store(true)
		close(s.done)
		s.goMu.Unlock()
		s.wg.Wait()
		s.wmu.Lock()
		defer s.wmu.Unlock()
		var err error
		for err == nil && s.uses.pending() && !s.opts.ReadOnly { // a transaction's worth at a time
			err = s.updateLocked(context.Background(), func(*wtx) error { return nil })
		}
		s.closeErr = errors.Join(err, s.db.Close(), s.lock.Close())
	})
	return s.closeErr
}

// Revision returns the revision of the last committed change, 0 for a new
// store. It is safe for concurrent use.
func (s *Store) Revision(ctx context.Context) (uint64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	return s.hub.Revision(), nil
}

// check fails when the store is closed or ctx is done.
func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// now returns the store clock's time in UTC, without a monotonic reading.
func (s *Store) now() time.Time { return s.opts.Now().UTC().Round(0) }

// dbErr turns bbolt's "not open" into store.ErrClosed.
func dbErr(err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return store.ErrClosed
	}
	return err
}

// pathErr is check.PathError with bbolt's errors translated (dbErr).
func pathErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	return check.PathError(op, path, dbErr(err))
}

// limits are the size limits check applies.
func (s *Store) limits() check.Limits {
	return check.Limits{MaxFileBytes: s.opts.MaxFileBytes, MaxStoreBytes: s.opts.MaxStoreBytes, KeepVersions: s.opts.KeepVersions}
}
