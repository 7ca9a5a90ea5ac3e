package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	bbolt "go.etcd.io/bbolt"
)

// The change log. Every event a commit publishes is also written, in the
// same transaction, to the changes bucket, and the log keeps the last
// Options.History of them (by revision: bolt gives each change its own),
// so Changes and Watch resume after a restart from what the file holds.
// The hub is filled from the log at open and is only a cache in front of
// it: it holds the same events.

// bucketChanges holds the change log: revision (8 bytes) → the event as
// JSON, sealed in a keyed store (it names content by its plain SHA-256). Its value is read only by this package.
var bucketChanges = []byte("changes")

// keyChangesFrom, in the meta bucket, is the revision after which the log
// holds every change. A file written before the log existed gets its
// revision at its first writable open: nothing earlier is known.
var keyChangesFrom = []byte("changes-from")

// logEvents appends w's events to the change log and drops the changes
// older than the log keeps.
func (w *wtx) logEvents() error {
	b := w.tx.Bucket(bucketChanges)
	for _, ev := range w.events {
		v, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("change log: %w", err)
		}
		k := u64bytes(ev.Revision)
		if err := b.Put(k, w.s.sealer.sealValue(adChange, k, v)); err != nil {
			return err
		}
	}
	keep := uint64(w.s.opts.History)
	if w.rev <= keep {
		return nil
	}
	cutoff := w.rev - keep
	// The old keys are found first and deleted after: a cursor's First
	// after each Delete steps again over every leaf the earlier deletes
	// emptied (bbolt removes them only at commit), quadratic in the
	// changes one transaction drops: a quarter of the CPU of a
	// transaction of 10,000 files.
	var old []uint64
	c := b.Cursor()
	for k, _ := c.First(); k != nil && u64(k) <= cutoff; k, _ = c.Next() {
		old = append(old, u64(k))
	}
	for _, r := range old {
		if err := b.Delete(u64bytes(r)); err != nil {
			return err
		}
	}
	if u64(w.meta.Get(keyChangesFrom)) >= cutoff {
		return nil
	}
	return w.meta.Put(keyChangesFrom, u64bytes(cutoff))
}

// loadChanges reads the change log for the hub: the revision after which
// it is whole and its events. A file without a log (an older file opened
// read-only) has none after rev.
func loadChanges(tx *bbolt.Tx, rev uint64, c sealer) (uint64, []store.Event, error) {
	b := tx.Bucket(bucketChanges)
	from := u64(tx.Bucket(bucketMeta).Get(keyChangesFrom))
	if b == nil || tx.Bucket(bucketMeta).Get(keyChangesFrom) == nil {
		return rev, nil, nil
	}
	var evs []store.Event
	err := b.ForEach(func(k, v []byte) error {
		v, err := c.openValue(adChange, k, v)
		if err != nil {
			return fmt.Errorf("change log at %d: %w", u64(k), err)
		}
		var ev store.Event
		if err := json.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("change log at %d: %w", u64(k), err)
		}
		evs = append(evs, ev)
		return nil
	})
	return from, evs, err
}

// Changes reads the change log (see store.Store.Changes) from the hub,
// which holds what the log holds. It is safe for concurrent use.
func (s *Store) Changes(ctx context.Context, prefix string, after uint64, limit int) (store.ChangePage, error) {
	if err := s.check(ctx); err != nil {
		return store.ChangePage{}, err
	}
	if err := check.Path("changes", prefix); err != nil {
		return store.ChangePage{}, err
	}
	return s.hub.Changes(prefix, after, limit), nil
}
