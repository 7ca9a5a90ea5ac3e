package nats

import (
	"context"
	"sync"
	"time"
)

// catchUp makes reads close-to-open across hosts: an open (a listing, a lookup
// that misses) on this host first waits until the view has applied the
// tree stream up to the last sequence the cluster reports, so it sees
// every write any host had acknowledged before the open began. Concurrent
// callers share one round trip: a caller joins the next request to be
// sent, never one already on its way, whose answer could predate writes
// acknowledged before the caller began.
//
// While the cluster does not answer (no leader), reads go on from this
// host's state: a failed round makes the calls of the next
// catchUpPause skip the round trip rather than each wait for it.
type catchUp struct {
	mu       sync.Mutex
	running  bool
	next     *round // the round callers arriving now join
	failedAt time.Time
}

// round is one request for the stream's last sequence, shared by the
// callers that joined it.
type round struct {
	done chan struct{}
	seq  uint64
	err  error
}

// Bounds of a catch-up round trip.
const (
	// catchUpTimeout bounds the wait for the cluster's answer: a read is
	// not held up longer by a cluster that lost its leader.
	catchUpTimeout = 500 * time.Millisecond
	// catchUpPause is how long reads skip the round trip after one failed.
	catchUpPause = 2 * time.Second
)

// sync waits until this host's view has applied every write the cluster
// had acknowledged when sync was called. An error means the cluster did
// not answer in time; the caller then reads what this host has.
func (s *Store) sync(ctx context.Context) error {
	c := &s.catchUp
	c.mu.Lock()
	if !c.failedAt.IsZero() && time.Since(c.failedAt) < catchUpPause {
		c.mu.Unlock()
		return nil
	}
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	r := c.next
	if !c.running {
		c.running, c.next = true, nil
		if s.start(context.WithoutCancel(ctx), func() { s.rounds(r) }) != nil {
			c.running = false
			c.mu.Unlock()
			return nil
		}
	}
	c.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if r.err != nil {
		return r.err
	}
	wctx, cancel := context.WithTimeout(ctx, catchUpTimeout)
	defer cancel()
	return s.waitApplied(wctx, r.seq)
}

// rounds sends r, then the rounds callers queued meanwhile, one at a
// time, until none is waiting.
func (s *Store) rounds(r *round) {
	c := &s.catchUp
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
		r.seq, r.err = s.lastSeq(ctx)
		cancel()
		c.mu.Lock()
		if r.err != nil {
			c.failedAt = time.Now()
		} else {
			c.failedAt = time.Time{}
		}
		close(r.done)
		r, c.next = c.next, nil
		if r == nil {
			c.running = false
		}
		c.mu.Unlock()
	}
}
