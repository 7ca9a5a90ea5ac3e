package bolt

import (
	"context"
	"errors"
	"slices"
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// Group commit. Every write queues itself and waits for Store.wmu or for
// its write to be done, whichever comes first; the writer that gets wmu
// takes all the writes queued meanwhile (up to maxBatch) and runs them, in
// queue order, in one bbolt transaction: one commit, one fsync for all of
// them. Each is acknowledged only after that commit returns. While it
// commits, new writes queue up for the next transaction, so the batch size
// follows the load without a timer: a lone writer commits at once.
//
// A write that fails must not leave its partial changes in a transaction
// shared with others, and bbolt has no savepoints. So the transaction is
// rolled back, the failed write gets its error, and the others run again in
// a new transaction. That serializes the failed write after the ones before
// it, where it failed, and changes nothing else; it is why update's
// functions must be repeatable.

// maxBatch bounds the writes in one transaction.
const maxBatch = 256

// commit is one write waiting for a transaction. answered and err are
// written only under Store.wmu; done is closed once they are final, so the
// writer waits for it, not for the lock: the writers of one batch all wake
// at once when it commits, instead of taking the lock in turn just to find
// their write done.
type commit struct {
	ctx context.Context
	fn  func(*wtx) error
	// ran, if set, is called once fn's last run has succeeded and the
	// transaction is about to commit, and the function it returns
	// (ended) once the commit has ended (store.CommitHook).
	ran      func() func(error)
	ended    func(error)
	err      error
	answered bool
	done     chan struct{}
}

// answer makes err the outcome of c and wakes its writer.
func (c *commit) answer(err error) {
	c.err, c.answered = err, true
	close(c.done)
}

// writeLock is Store.wmu: a mutex a writer can wait for in a select, beside
// its commit's done channel.
type writeLock chan struct{}

// Lock takes the lock.
func (l writeLock) Lock() { l <- struct{}{} }

// Unlock releases it.
func (l writeLock) Unlock() { <-l }

// commitQueue holds the writes waiting for Store.wmu.
type commitQueue struct {
	mu      sync.Mutex
	pending []*commit
}

func (q *commitQueue) add(c *commit) {
	q.mu.Lock()
	q.pending = append(q.pending, c)
	q.mu.Unlock()
}

// take removes and returns up to maxBatch of the oldest pending writes.
func (q *commitQueue) take() []*commit {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.pending), maxBatch)
	batch := make([]*commit, n)
	copy(batch, q.pending)
	q.pending = append(q.pending[:0], q.pending[n:]...)
	return batch
}

// errRetry rolls back a shared transaction in which one write failed.
var errRetry = errors.New("bolt: a write in the batch failed")

// commitLocked runs batch in as few transactions as its failures allow and
// answers every write in it. The caller holds s.wmu.
func (s *Store) commitLocked(batch []*commit) {
	for len(batch) > 0 {
		failed, err := s.tryCommit(batch)
		if failed < 0 {
			for _, c := range batch {
				if !c.answered {
					c.answer(err)
				}
			}
			return
		}
		batch = slices.DeleteFunc(batch, func(c *commit) bool { return c.answered })
	}
}

// tryCommit runs the unanswered writes of batch in one transaction. When one
// of them fails it answers that one with its error, rolls back and returns
// its index; otherwise it returns -1 and the transaction's outcome, which
// applies to every unanswered write. A write whose context is done is
// answered with the context's error without running.
func (s *Store) tryCommit(batch []*commit) (int, error) {
	read := s.uses.take()
	var w *wtx
	gcLocked := false
	failed := -1
	err := s.db.Update(func(tx *bbolt.Tx) error {
		var err error
		if w, err = s.begin(tx); err != nil {
			return err
		}
		before := w.c
		if err := w.flush(read); err != nil {
			return err
		}
		for i, c := range batch {
			if c.answered {
				continue
			}
			if err := c.ctx.Err(); err != nil {
				c.answer(err)
				continue
			}
			w.callRev = w.rev
			if err := c.fn(w); err != nil {
				c.answer(err)
				failed = i
				return errRetry
			}
		}
		gcLocked, err = w.finish(before)
		if err != nil {
			return err
		}
		for _, c := range batch {
			if !c.answered && c.ran != nil {
				c.ended = c.ran()
			}
		}
		return nil
	})
	for _, c := range batch {
		if c.ended != nil {
			c.ended(dbErr(err))
			c.ended = nil
		}
	}
	if gcLocked {
		s.gc.mu.Unlock()
	}
	if err != nil {
		s.uses.giveBack(read)
		if failed >= 0 {
			return failed, nil
		}
		err = dbErr(err)
		s.commitErr.Store(&err)
		return -1, err
	}
	s.commitErr.Store(nil)
	w.keepSkip()
	s.staged.apply(w.staged)
	s.charged.add(w.charges)
	if n := len(w.events); n > 0 {
		s.hub.Publish(w.events, w.events[n-1].Revision)
	}
	return -1, nil
}
