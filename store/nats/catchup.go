package nats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/store"
)

// catchUp makes reads close-to-open across hosts: an open (a listing, a lookup
// that misses) on this host first waits until the view has applied the
// tree stream up to the last sequence the cluster reports, so it sees
// every write any host had acknowledged before the open began. Concurrent
// callers share one round trip: a caller joins the next request to be
// sent, never one already on its way, whose answer could predate writes
// acknowledged before the caller began.
//
// While the cluster does not answer (an election, a quorum loss), a read
// asks again until the time limit of a write (Options.WriteTimeout), then
// fails with store.ErrUnavailable: this host's own copy may lack a write
// another host had acknowledged, and reading it would show old bytes.
type catchUp struct {
	mu      sync.Mutex
	running bool
	next    *round      // the round callers arriving now join
	local   atomic.Bool // reads never catch up (a test's baseline, LocalReads)
	// afterRound, when set (tests only, AfterRound), runs once a round
	// has its answer, before its callers catch up to it.
	afterRound func()
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
	// catchUpTimeout bounds one request for the cluster's last sequence:
	// a cluster electing a leader is asked again soon.
	catchUpTimeout = 500 * time.Millisecond
	// catchUpRetry spaces the rounds of a read waiting out an election.
	catchUpRetry = 50 * time.Millisecond
)

// sync waits until this host's view has applied every write the cluster
// had acknowledged when sync was called. It fails, with an error wrapping
// store.ErrUnavailable, when the cluster could not say or this host could
// not apply it within Options.WriteTimeout; the caller must not then read
// this host's state as the latest.
func (s *Store) sync(ctx context.Context) error {
	if s.catchUp.local.Load() {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.opts.WriteTimeout)
	defer cancel()
	var last error
	for pause := false; ; pause = true {
		if pause && !errors.Is(last, errSkipped) {
			select {
			case <-wctx.Done():
			case <-time.After(catchUpRetry):
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if wctx.Err() != nil {
			s.log.Warn("nats: a read could not catch up with the cluster; it fails rather than show this host's copy", "within", s.opts.WriteTimeout, "err", last)
			return fmt.Errorf("%w: this host could not catch up with the cluster within %v: %w", store.ErrUnavailable, s.opts.WriteTimeout, last)
		}
		// Taken before the round is sent: a message skipped before it is
		// covered by the sequence the round brings back (see errSkipped).
		skips := s.view.skipped()
		r, err := s.joinRound(wctx)
		if err != nil {
			return err
		}
		select {
		case <-r.done:
		case <-wctx.Done():
			continue
		}
		if last = r.err; last != nil {
			continue
		}
		if last = s.waitApplied(wctx, r.seq); last != nil {
			if wctx.Err() == nil {
				return last
			}
			continue
		}
		if s.view.skipped() == skips {
			return nil
		}
		last = errSkipped
		s.log.Debug("nats: a read catches up again", "reached", r.seq, "err", last)
	}
}

// errSkipped is why a read that caught up asks again at once: while
// it applied the stream up to the round's sequence, the view skipped
// messages the servers had deleted, and the later messages that
// replaced them (the bucket keeps one value per key) may lie past that
// sequence. Until the view applied those too, its state at the round's
// sequence lacks the values the skipped messages held: a path written
// at 1960, then at 1967, reads as it was before 1960 on a view that
// applied up to 1961 having skipped 1960. A round sent after the skip
// brings back a sequence at or past every replacement, which existed
// when the skipped message was deleted.
var errSkipped = errors.New("the view skipped messages deleted while it caught up")

// joinRound returns the round a caller arriving now joins, sending it
// when none is in flight.
func (s *Store) joinRound(ctx context.Context) (*round, error) {
	c := &s.catchUp
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next == nil {
		c.next = &round{done: make(chan struct{})}
	}
	r := c.next
	if !c.running {
		c.running, c.next = true, nil
		if err := s.start(context.WithoutCancel(ctx), func() { s.rounds(r) }); err != nil {
			c.running = false
			return nil, err
		}
	}
	return r, nil
}

// rounds sends r, then the rounds callers queued meanwhile, one at a
// time, until none is waiting.
func (s *Store) rounds(r *round) {
	c := &s.catchUp
	for r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), catchUpTimeout)
		r.seq, r.err = s.lastSeq(ctx)
		cancel()
		if c.afterRound != nil {
			c.afterRound()
		}
		c.mu.Lock()
		close(r.done)
		r, c.next = c.next, nil
		if r == nil {
			c.running = false
		}
		c.mu.Unlock()
	}
}

// CatchUp waits until this host has applied every write any host had
// acknowledged before the call, as an open does first (see catchUp): it
// shares a round trip with concurrent callers, waits out an election, and
// fails with an error wrapping store.ErrUnavailable when it cannot within
// Options.WriteTimeout. The mount calls it before each lookup of a live
// name. It is safe for concurrent use.
func (s *Store) CatchUp(ctx context.Context) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return s.sync(ctx)
}
