package nats

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
)

// pullAfter is how long a host waits for its consumer to deliver anything
// before it reads a message the cluster committed from the stream's
// leader itself (see Store.waitApplied).
const pullAfter = 30 * time.Millisecond

// maxPull bounds the messages one pull reads.
const maxPull = 1024

// waitApplied waits until this host's view applied sequence seq, which the
// cluster has committed. The consumer delivers it within milliseconds,
// except when the server it lived on died: a new consumer can only be
// created once the cluster's meta leader is elected, which took up to 6 s
// longer than the stream's own election when one server led both (the
// stall after a leader kill that remained in about one run in three). So
// when the view applied nothing at all for pullAfter, the missing messages
// are read from the stream's leader, which the election just made, and
// applied as the consumer would; one pull at a time. A consumer that
// delivers, however far behind, is left to catch up. Like view.waitFor,
// it gives up after applyTimeout.
func (s *Store) waitApplied(ctx context.Context, seq uint64) error {
	giveUp := time.Now().Add(applyTimeout)
	for {
		before := s.view.applied()
		wctx, cancel := context.WithTimeout(ctx, pullAfter)
		err := s.view.waitFor(wctx, seq)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return err
		}
		if time.Now().After(giveUp) {
			return fmt.Errorf("this host has not applied the tree bucket up to sequence %d within %v (applied %d)", seq, applyTimeout, s.view.applied())
		}
		if s.view.applied() != before || !s.pullMu.TryLock() {
			continue
		}
		err = s.pull(ctx, seq)
		s.pullMu.Unlock()
		if err != nil {
			s.log.Debug("nats: reading the tree from the stream's leader", "to", seq, "err", err)
		}
	}
}

// pull reads the tree stream's messages after the last the view applied,
// up to sequence to (at most maxPull), from the stream's leader, and hands
// them to the view. Only the leader answers this request: a replica's
// direct get could miss a message it has not stored yet, which the view
// would then skip.
func (s *Store) pull(ctx context.Context, to uint64) error {
	var msgs []msg
	for from := s.view.applied() + 1; from <= to && len(msgs) < maxPull; {
		m, ok, err := s.nextMsg(ctx, from)
		if err != nil {
			return err
		}
		if !ok || m.seq > to {
			break
		}
		msgs = append(msgs, m)
		from = m.seq + 1
	}
	s.view.pulled(msgs)
	return nil
}

// msgGetResponse is the stream leader's answer to a message request.
type msgGetResponse struct {
	Error *struct {
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Message *struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Header  []byte `json:"hdrs"`
		Data    []byte `json:"data"`
	} `json:"message"`
}

// errCodeNoMessage is the JetStream error code of a request for a message
// the stream does not have.
const errCodeNoMessage = 10037

// nextMsg asks the tree stream's leader for its first message at or after
// sequence from; ok is false when there is none.
func (s *Store) nextMsg(ctx context.Context, from uint64) (msg, bool, error) {
	req, err := json.Marshal(map[string]any{"seq": from, "next_by_subj": s.subject(">")})
	if err != nil {
		return msg{}, false, err
	}
	rctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	resp, err := s.nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET.KV_"+s.bucket, req)
	if err != nil {
		return msg{}, false, fmt.Errorf("reading message %d: %w", from, err)
	}
	var r msgGetResponse
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return msg{}, false, fmt.Errorf("reading message %d: unreadable answer: %w", from, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == errCodeNoMessage:
		return msg{}, false, nil
	case r.Error != nil:
		return msg{}, false, fmt.Errorf("reading message %d: %s (code %d)", from, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return msg{}, false, fmt.Errorf("reading message %d: an answer without a message", from)
	}
	m := msg{seq: r.Message.Seq, subject: r.Message.Subject, data: r.Message.Data}
	if len(r.Message.Header) > 0 {
		if m.header, err = nats.DecodeHeadersMsg(r.Message.Header); err != nil {
			return msg{}, false, fmt.Errorf("reading message %d: %w", from, err)
		}
	}
	return m, true, nil
}
