package bolt

import (
	"context"
	"errors"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
	bbolt "go.etcd.io/bbolt"
)

// expireBatch bounds the entries one expiry transaction removes.
const expireBatch = 1000

// ExpireEntries removes the files whose Expires has passed, by the store's
// clock, and that are not pinned, and returns how many it removed; then
// the snapshots that expired, as DeleteSnapshot would. Each is
// removed as Remove would: an EventRemoved, implicit parents left empty
// removed too, the content released. Pinned files never expire. The
// store's sweeper calls it every Options.SweepInterval when something is
// due; it is exported so tests (with Options.Now) and operators can run it
// at will. It is safe for concurrent use.
func (s *Store) ExpireEntries(ctx context.Context) (int, error) {
	total := 0
	for {
		n, more := 0, false
		err := s.update(ctx, func(w *wtx) error {
			n, more = 0, false
			var due []string
			c := w.expiry.Cursor()
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if expiryKeyTime(k).After(w.now) {
					break
				}
				if len(due) == expireBatch {
					more = true
					break
				}
				due = append(due, string(k[expiryKeyTimeLen:]))
			}
			for _, p := range due {
				r, err := getEntry(w.tree, p, w.s.sealer)
				if err != nil {
					return err
				}
				if r == nil || entryrec.Expires(r).IsZero() || r.Expires.After(w.now) {
					return errors.New("corrupt store: the expiry index disagrees with " + p)
				}
				if err := rules.Expire(w, p, r); err != nil {
					return err
				}
			}
			n = len(due)
			w.c.Expiries += int64(n)
			if more {
				return nil
			}
			_, err := rules.ExpireSnapshots(w, rules.ReleaseBudget(w.Limits()))
			return err
		})
		if err != nil {
			return total, err
		}
		total += n
		if !more {
			return total, nil
		}
	}
}

// expiryDue reports whether some file has expired.
func (s *Store) expiryDue() (bool, error) {
	due := false
	err := s.db.View(func(tx *bbolt.Tx) error {
		k, _ := tx.Bucket(bucketExpiry).Cursor().First()
		due = k != nil && !expiryKeyTime(k).After(s.now())
		if due {
			return nil
		}
		snaps, err := readSnapshots(tx)
		due = rules.SnapshotsDue(snaps, s.now())
		return err
	})
	return due, dbErr(err)
}

// sweeper removes expired files every Options.SweepInterval, and persists
// the uses reads left in memory every Options.FlushInterval when no write
// did it meanwhile, and whenever a transaction's worth of them wait (see
// usesPerFlush), until the store is closed.
func (s *Store) sweeper() {
	t := time.NewTicker(s.opts.SweepInterval)
	defer t.Stop()
	lastFlush := time.Now()
	ctx := context.Background()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		due, err := s.expiryDue()
		if due {
			var n int
			n, err = s.ExpireEntries(ctx)
			if n > 0 {
				s.log.Info("bolt: removed expired entries", "count", n)
			}
		}
		if err != nil && !errors.Is(err, store.ErrClosed) {
			s.log.Error("bolt: expiring entries", "err", err)
		}
		// Uses are persisted every FlushInterval, and at once while a
		// transaction's worth waits (see usesPerFlush).
		for s.uses.waiting() >= s.opts.usesPerFlush || (time.Since(lastFlush) >= s.opts.FlushInterval && s.uses.pending()) {
			lastFlush = time.Now()
			err = s.update(ctx, func(*wtx) error { return nil })
			if err != nil {
				if !errors.Is(err, store.ErrClosed) {
					s.log.Error("bolt: persisting uses", "err", err)
				}
				break
			}
		}
		if time.Since(lastFlush) >= s.opts.FlushInterval {
			lastFlush = time.Now()
		}
	}
}
