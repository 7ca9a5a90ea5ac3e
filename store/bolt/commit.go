package bolt

import (
	"context"
	"errors"
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// Group commit. Every write waits for Store.wmu; the writer that gets it
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

// commit is one write waiting for a transaction. Its fields other than ctx
// and fn are written and read only under Store.wmu.
type commit struct {
	ctx  context.Context
	fn   func(*wtx) error
	err  error
	done bool
}

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
// settles every write in it. The caller holds s.wmu.
func (s *Store) commitLocked(batch []*commit) {
	for len(batch) > 0 {
		failed, err := s.tryCommit(batch)
		if failed < 0 {
			for _, c := range batch {
				if !c.done {
					c.err, c.done = err, true
				}
			}
			return
		}
		batch = pending(batch)
	}
}

// settle settles every write of batch with err.
func settle(batch []*commit, err error) {
	for _, c := range batch {
		c.err, c.done = err, true
	}
}

// pending is the writes of batch not yet settled.
func pending(batch []*commit) []*commit {
	out := batch[:0]
	for _, c := range batch {
		if !c.done {
			out = append(out, c)
		}
	}
	return out
}

// tryCommit runs the unsettled writes of batch in one transaction. When one
// of them fails it settles that one with its error, rolls back and returns
// its index; otherwise it returns -1 and the transaction's outcome, which
// applies to every unsettled write. A write whose context is done is
// settled with the context's error without running.
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
			if c.done {
				continue
			}
			if err := c.ctx.Err(); err != nil {
				c.err, c.done = err, true
				continue
			}
			if err := c.fn(w); err != nil {
				c.err, c.done = err, true
				failed = i
				return errRetry
			}
		}
		gcLocked, err = w.finish(before)
		return err
	})
	if gcLocked {
		s.gc.mu.Unlock()
	}
	if err != nil {
		s.uses.giveBack(read)
		if failed >= 0 {
			return failed, nil
		}
		return -1, dbErr(err)
	}
	s.staged.apply(w.staged)
	s.hub.publish(w.events)
	return -1, nil
}
