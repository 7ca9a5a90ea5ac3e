package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// commit publishes a transaction's batch and waits until this host
// applied it. A batch whose acknowledgement was lost is settled before
// commit returns: its caller learns its fate, never a guess (see settle).
func (s *Store) commit(ctx context.Context, t *txn, msgs []*nats.Msg) error {
	seq, err := s.publish(ctx, t.base, msgs)
	if errors.Is(err, errAmbiguous) {
		return s.settle(ctx, t)
	}
	if err != nil {
		return err
	}
	if err := s.waitApplied(ctx, seq); err != nil {
		if errors.Is(err, store.ErrClosed) {
			// Committed, and this host closed before applying it: the
			// write succeeded. Read-your-writes holds, since a closed
			// host answers no read; another host shows it after Sync.
			// (Neither "no quorum" nor "unknown" is true here.)
			return nil
		}
		// Committed, but this host cannot show it: the caller cannot read
		// its write back here, so it must not be told it succeeded, nor
		// that nothing changed.
		return fmt.Errorf("%w: %w: the cluster committed the change at sequence %d, but this host has not applied it: read it back on a host that has: %w",
			store.ErrUnavailable, store.ErrOutcomeUnknown, seq, err)
	}
	return nil
}

// pubAck is the server's answer to a publish into a stream.
type pubAck struct {
	Seq   uint64 `json:"seq"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// JetStream error codes the store reacts to.
const (
	errCodeWrongLastSeq         = 10071
	errCodeWrongLastSeqConstant = 10164
	errCodeBatchTooLarge        = 10199
	errCodeBatchIncomplete      = 10176
	errCodeTooManyInflight      = 10210
)

// errBatchDropped reports a batch the server dropped before storing any
// of it (a message lost on the way, or too many batches in flight): it
// is sent again.
var errBatchDropped = errors.New("the server dropped the batch")

// errAmbiguous reports a batch the servers did not answer in time: it
// may have been committed.
var errAmbiguous = errors.New("the servers did not confirm the commit in time")

// publish commits msgs as one atomic batch on top of stream sequence base
// and returns the sequence of the last message. Every message is stored
// and replicated when the server acknowledges the commit, or none is. A
// batch refused because no server answered (a leader election) is sent
// again, and fails with errRetry when ctx ends with no other answer; one
// whose answer did not come in time fails with errAmbiguous.
func (s *Store) publish(ctx context.Context, base uint64, msgs []*nats.Msg) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	msgs[0].Header.Set("Nats-Expected-Last-Sequence", strconv.FormatUint(base, 10))
	last := msgs[len(msgs)-1]
	var ack pubAck
	err := retry(ctx, func() error {
		if len(msgs) > 1 {
			id := nuid.Next()
			for i, m := range msgs {
				m.Header.Set("Nats-Batch-Id", id)
				m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
			}
			last.Header.Set("Nats-Batch-Commit", "1")
			for _, m := range msgs[:len(msgs)-1] {
				if err := s.nc.PublishMsg(m); err != nil {
					return err
				}
			}
		}
		rctx, rcancel := context.WithTimeout(ctx, commitTimeout(len(msgs)))
		defer rcancel()
		resp, err := s.nc.RequestMsgWithContext(rctx, last)
		if err != nil {
			return err
		}
		ack = pubAck{}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("unreadable acknowledgement %q: %w", resp.Data, err)
		}
		if e := ack.Error; e != nil && (e.ErrCode == errCodeBatchIncomplete || e.ErrCode == errCodeTooManyInflight) {
			return fmt.Errorf("%w: %s", errBatchDropped, e.Description)
		}
		return nil
	})
	switch {
	case err != nil && transient(err) && !ambiguous(err):
		// Every attempt was refused before a stream stored anything (no
		// leader took it): the change runs again while the write has
		// time, and one out of time changed nothing.
		return 0, fmt.Errorf("%w: %w", errRetry, err)
	case err != nil && (ambiguous(err) || transient(err)):
		return 0, fmt.Errorf("%w: %w", errAmbiguous, err)
	case err != nil:
		return 0, fmt.Errorf("committing to the tree bucket: %w", err)
	}
	if e := ack.Error; e != nil {
		switch e.ErrCode {
		case errCodeWrongLastSeq, errCodeWrongLastSeqConstant:
			return 0, errConflict
		case errCodeBatchTooLarge:
			return 0, fmt.Errorf("%w: the change writes %d records, more than the servers accept in one atomic batch (%s: their jetstream limits batch max_msgs, lower than --nats-max-batch)",
				store.ErrBatchLimit, len(msgs), e.Description)
		}
		return 0, fmt.Errorf("committing to the tree bucket: %s (code %d)", e.Description, e.ErrCode)
	}
	if want := base + uint64(len(msgs)); ack.Seq != want {
		return 0, fmt.Errorf("corrupt store: the batch ends at sequence %d, expected %d", ack.Seq, want)
	}
	return ack.Seq, nil
}

// requestTimeout bounds one attempt of a request; a cluster electing a
// leader answers the next one.
const requestTimeout = 2 * time.Second

// commitTimeout bounds one attempt to commit a batch of n messages. It is
// short, so that a batch sent to a leader that just died is settled soon
// after the election (see settle; it is never sent again), and a leader
// that stores and replicates a batch answers well within it.
func commitTimeout(n int) time.Duration {
	return 500*time.Millisecond + time.Duration(n)*100*time.Microsecond
}

// probeTimeout bounds a question to the stream's leader while a commit is
// unconfirmed: a cluster without a leader is asked again soon.
const probeTimeout = 250 * time.Millisecond

// settle finds out the fate of a batch whose commit went unconfirmed: it
// returns nil once the batch is known committed, errRetry once it is
// known never to be, and an error wrapping store.ErrOutcomeUnknown (and
// store.ErrUnavailable) when ctx ends first. It never sends the batch again.
//
// The batch may still sit in the log of a leader that lost its quorum,
// and commit whenever a new leader that has it commits anything, so the
// stream's last sequence alone proves nothing while it is t.base. settle
// therefore commits a fence: a message with no condition, which the
// servers order after every entry still pending in the new leader's log;
// an entry not in that log can never commit once the fence has. When the
// fence (or any change after t.base) is applied here, the batch committed
// if and only if its transaction id is among the applied messages.
// (Sending the batch itself again is not safe: a leader just elected may
// accept it before it applied the entries of its predecessor's term, and
// then commit both copies.)
func (s *Store) settle(ctx context.Context, t *txn) error {
	var why error // the latest reason the batch's fate is unknown
	wait := 20 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		last, err := s.lastSeq(pctx)
		cancel()
		if err == nil && last <= t.base {
			last, err = s.fence(ctx)
		}
		if err == nil {
			if err := s.waitApplied(ctx, last); err != nil {
				return err
			}
			if s.landed(ctx, t) {
				return nil
			}
			return errRetry
		}
		why = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %w: the change was sent, but the cluster neither confirmed nor refused it in time: it may have been applied, or be applied when the cluster recovers: %w", store.ErrUnavailable, store.ErrOutcomeUnknown, why)
		case <-s.done:
			return store.ErrClosed
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// fence commits a message that changes nothing (keyFence) and returns its
// sequence: once it is committed, every entry an earlier leader left
// pending is either committed before it or gone for good.
func (s *Store) fence(ctx context.Context) (uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, commitTimeout(1))
	defer cancel()
	resp, err := s.nc.RequestMsgWithContext(rctx, nats.NewMsg(s.subject(keyFence)))
	if err != nil {
		return 0, fmt.Errorf("committing a fence: %w", err)
	}
	var ack pubAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("committing a fence: unreadable acknowledgement %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("committing a fence: %s (code %d)", ack.Error.Description, ack.Error.ErrCode)
	}
	return ack.Seq, nil
}

// lastSeq asks the tree stream's leader for the stream's last committed
// sequence; ctx bounds the wait. While the stream elects a leader, every
// replica answers stream info from its own state, and one that lags may
// lack a change the old leader acknowledged: such an answer (no leader
// named) is refused, so a read never catches up to less than was
// acknowledged.
func (s *Store) lastSeq(ctx context.Context) (uint64, error) {
	info, err := s.tree.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("asking for the tree's last sequence: %w", err)
	}
	if info.Cluster != nil && info.Cluster.Leader == "" && s.opts.Replicas > 1 {
		return 0, errNoLeader
	}
	return info.State.LastSeq, nil
}

// errNoLeader reports stream info answered by a replica while the tree
// stream has no leader.
var errNoLeader = errors.New("asking for the tree's last sequence: the tree stream has no leader")

// landed reports whether t's batch is in the stream, which this host
// has applied past t.base: its first message, this host's marker, carries
// the transaction id, and no later batch replaced it (this host sends
// none before settle returns), so the view saw it. The view remembers the
// last 65,536 ids; past those, the marker is read at t.base+1.
func (s *Store) landed(ctx context.Context, t *txn) bool {
	if s.view.committed(t.id) {
		return true
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	m, err := s.tree.GetMsg(rctx, t.base+1)
	return err == nil && m.Header.Get(hdrTxn) == t.id
}
