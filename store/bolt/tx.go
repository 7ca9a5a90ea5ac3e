package bolt

import (
	"context"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// init creates the buckets of a new file, checks the schema of an existing
// one (upgrading schema 1), sweeps orphaned blobs, and loads the revision,
// the counters and what uploads in progress hold.
func (s *Store) init() (uint64, error) {
	var rev uint64
	var c counters
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		meta := tx.Bucket(bucketMeta)
		switch v := meta.Get(keySchema); {
		case v == nil:
			if err := meta.Put(keySchema, u64bytes(schemaVersion)); err != nil {
				return err
			}
		case u64(v) == 1:
			if err := migrate(tx); err != nil {
				return fmt.Errorf("upgrading from schema 1: %w", err)
			}
		case u64(v) == 2:
			if err := meta.Put(keySchema, u64bytes(schemaVersion)); err != nil {
				return err
			}
		case u64(v) != schemaVersion:
			return fmt.Errorf("schema version %d, this build reads %d", u64(v), schemaVersion)
		}
		if err := s.loadSeal(tx, s.opts.Key); err != nil {
			return err
		}
		rev = u64(meta.Get(keyRevision))
		if meta.Get(keyChangesFrom) == nil {
			if err := meta.Put(keyChangesFrom, u64bytes(rev)); err != nil {
				return err
			}
		}
		var err error
		if s.logFrom, s.logged, err = loadChanges(tx, rev, s.sealer); err != nil {
			return err
		}
		var hs []hash
		err = tx.Bucket(bucketOrphans).ForEach(func(k, _ []byte) error {
			var h hash
			copy(h[:], k)
			hs = append(hs, h)
			return nil
		})
		if err != nil {
			return err
		}
		for _, h := range hs {
			if err := sweepBlob(tx, h); err != nil {
				return err
			}
		}
		if c, err = loadCounters(meta); err != nil {
			return err
		}
		s.skip = loadSkip(meta, rev)
		if err := s.charged.load(tx, s.quota, s.sealer); err != nil {
			return err
		}
		return s.staged.load(tx.Bucket(bucketUploads), s.sealer)
	})
	s.uses.init(c, s.opts.usesPerFlush)
	return rev, err
}

// wtx is one write transaction on the namespace: the buckets, the clock
// reading for the whole transaction, the counters, and what to do after
// the commit.
type wtx struct {
	s                                 *Store
	tx                                *bbolt.Tx
	meta, tree, blobs, chunks, orphan *bbolt.Bucket
	lru, refs, expiry, versions       *bbolt.Bucket
	chunkSize                         int64
	now                               time.Time // the transaction's clock

	rev, ino      uint64
	base          uint64    // the revision before the transaction's changes
	callRev       uint64    // rev when the running call of the group started (see Fresh)
	skipNext      *heldSkip // what makeRoom found of the held content (see heldSkip)
	lruIn         [][]byte  // keys put into the live lru index since skipNext was found
	c             counters  // as committed before, changed by the transaction
	events        []store.Event
	dropped       []hash            // blobs whose reference count reached 0
	staged        staging           // change to what uploads in progress hold
	charges       quota.Charges     // change to what the quotas' prefixes are charged
	rules.Touched                   // directories whose times move (see touchDirs)
	snaps         *[]store.Snapshot // the snapshots, once read (see Snapshots)
}

// update runs fn in a bbolt write transaction and returns once that
// transaction has committed (and fsynced) or fn has failed. On success the
// transaction deletes or defers the blobs fn dropped, and fn's events are
// published after the commit. Every transaction also persists the uses and
// counts that reads left in memory.
//
// Concurrent calls share transactions (group commit, see commit.go): fn may
// run more than once, each time in a fresh transaction that is then rolled
// back, so it must set every result it reports on each run and have no
// effect outside w.
func (s *Store) update(ctx context.Context, fn func(w *wtx) error) error {
	return s.updateHooked(ctx, fn, nil)
}

// updateHooked is update, calling ran (if set) once fn's last run has
// succeeded and the transaction starts to commit, and the function ran
// returns once the commit has ended (store.CommitHook).
func (s *Store) updateHooked(ctx context.Context, fn func(w *wtx) error, ran func() func(error)) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	c := &commit{ctx: ctx, fn: fn, ran: ran, done: make(chan struct{})}
	s.queue.add(c)
	for {
		select {
		case <-c.done:
			return c.err
		case s.wmu <- struct{}{}:
		}
		if !c.answered {
			if s.closed.Load() {
				for _, q := range s.queue.take() {
					q.answer(store.ErrClosed)
				}
			} else {
				s.commitLocked(s.queue.take())
			}
		}
		s.wmu.Unlock()
	}
}

// updateLocked is update for a caller holding s.wmu, in a transaction of its
// own.
func (s *Store) updateLocked(ctx context.Context, fn func(w *wtx) error) error {
	c := &commit{ctx: ctx, fn: fn, done: make(chan struct{})}
	s.commitLocked([]*commit{c})
	return c.err
}

// begin starts the state of a write transaction on tx.
func (s *Store) begin(tx *bbolt.Tx) (*wtx, error) {
	w := &wtx{
		s:         s,
		tx:        tx,
		meta:      tx.Bucket(bucketMeta),
		tree:      tx.Bucket(bucketTree),
		blobs:     tx.Bucket(bucketBlobs),
		chunks:    tx.Bucket(bucketChunks),
		orphan:    tx.Bucket(bucketOrphans),
		lru:       tx.Bucket(bucketLRU),
		refs:      tx.Bucket(bucketRefs),
		expiry:    tx.Bucket(bucketExpiry),
		versions:  tx.Bucket(bucketVersions),
		chunkSize: int64(s.opts.ChunkSize),
	}
	w.now = s.now()
	w.charges = s.quota.Zero()
	w.rev = u64(w.meta.Get(keyRevision))
	w.base = w.rev
	w.ino = u64(w.meta.Get(keyInode))
	if w.ino < store.RootIno {
		w.ino = store.RootIno
	}
	var err error
	w.c, err = loadCounters(w.meta)
	return w, err
}

// finish writes what w changed in the metadata and drops the blobs w's
// transaction released; it reports whether it took s.gc.mu, which the
// caller then holds until the transaction has committed, so Open cannot pin
// a blob between the check and the deletion becoming visible.
func (w *wtx) finish(before counters) (gcLocked bool, err error) {
	if err := w.touchDirs(); err != nil {
		return false, err
	}
	if err := w.settleSkip(); err != nil {
		return false, err
	}
	if len(w.events) > 0 {
		if err := w.meta.Put(keyRevision, u64bytes(w.rev)); err != nil {
			return false, err
		}
		if err := w.logEvents(); err != nil {
			return false, err
		}
		if err := w.meta.Put(keyInode, u64bytes(w.ino)); err != nil {
			return false, err
		}
	}
	w.syncUseCounts()
	if w.c != before {
		if err := w.meta.Put(keyCounters, w.c.encode()); err != nil {
			return false, err
		}
	}
	if len(w.dropped) == 0 {
		return false, nil
	}
	w.s.gc.mu.Lock()
	for _, h := range w.dropped {
		if err := w.s.gc.dropLocked(w.tx, h); err != nil {
			return true, err
		}
	}
	return true, nil
}
