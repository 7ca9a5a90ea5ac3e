package tool

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/tenant"
	"github.com/depotfs/depotfs/mcpserver/internal/archive"
)

var _ Auditor = (*audit.Log)(nil)

// NewCall starts the bookkeeping of one call of the tool (or other audited
// request, such as a resource read) name, which grants may also name by
// group, by the identity in ctx. Runtime.Handler makes the Call of every
// tool call; resource reads make their own and end it with Finish.
func (s *Runtime) NewCall(ctx context.Context, name, group string) *Call {
	who, _ := identity.FromContext(ctx)
	c := &Call{
		ctx: ctx, rt: s, def: def{name: name, group: group}, who: who,
		perms: s.policy.For(who), key: Key(who), tenant: tenant.Of(who), start: s.env.Now(), reqID: newRequestID(),
	}
	if cs := server.ClientSessionFromContext(ctx); cs != nil {
		c.session = cs.SessionID()
	}
	c.store = &Store{rt: s, c: c}
	c.args.SetMount(s.env.MountPoint)
	return c
}

// Cancelled reports whether the caller went away before the call
// finished.
func (c *Call) Cancelled() bool { return c.ctx != nil && c.ctx.Err() != nil }

// newRequestID returns a random id that names one call in the reply's
// stats, the audit record and the log line.
func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// Finish ends a call's bookkeeping: its identity's counts, a warning on an
// unusual burst of denials, the audit record and the log line. err is the
// call's failure, nil on success. It returns the audit log's error: the
// call must then be refused, unless it committed a change (its record is
// then held and written by a later append, and the reply says so).
func (s *Runtime) Finish(c *Call, err error) error {
	var f *Failure
	if err != nil {
		failure := Classify(err)
		f = &failure
	}
	now := s.env.Now()
	denied := errors.Is(err, policy.ErrDenied)
	_, limited := errors.AsType[*RateError](err)
	_, unaudited := errors.AsType[*auditError](err)
	refused := denied || limited || unaudited
	st := s.stats.update(c.key, func(st *IdentityStats) {
		st.Calls++
		switch {
		case denied:
			st.Denied++
		case limited:
			st.RateLimited++
		case err != nil:
			st.Failed++
		}
		if c.committed {
			st.Bytes += c.Size
		}
		st.Last = now
	})
	c.counts = st
	if denied && s.limiter.Denial(c.key, now) {
		s.log.Warn("unusual pattern: a burst of denied calls from one identity",
			"identity", c.key, "denied", st.Denied, "calls", st.Calls, "last_tool", c.def.name, "last_reason", err.Error())
	}

	var auditErr error
	if s.audit != nil {
		r := s.callRecord(c, f, err, refused, now)
		if c.early != nil {
			auditErr = s.settleEarly(c, r, err)
		} else {
			deferred := c.readOnly && r.Decision == audit.Allow
			auditErr = s.held.append(s.audit, r, c.committed, deferred)
		}
		if auditErr != nil {
			if c.committed {
				s.log.Error("audit record not written yet: the call's change is stored; the record is kept and written once the audit log works, later calls are refused until then",
					"tool", c.def.name, "identity", c.who.String(), "request_id", c.reqID, "paths", r.Paths, "err", auditErr)
			} else {
				s.log.Error("audit record not written; the call is refused", "tool", c.def.name, "identity", c.who.String(), "request_id", c.reqID, "err", auditErr)
			}
		}
	}
	s.logCall(c, f, err)
	return auditErr
}

// settleEarly settles the record c wrote while its write committed
// (RecordAtCommit): it confirms it when the call succeeded, and otherwise
// writes r, the call's outcome, amending it. A record that cannot be
// written is held, as Finish holds any: r when the call committed, and an
// amending r always, so the early record is not left standing alone once
// the log works again.
func (s *Runtime) settleEarly(c *Call, r *audit.Record, err error) error {
	ea := s.audit.(EarlyAuditor) // c.early is set only when it is one
	if err == nil {
		aerr := ea.Confirm(c.early, r)
		if aerr != nil && c.committed {
			s.held.hold(r)
		}
		return aerr
	}
	aerr := ea.Amend(c.early, r)
	if aerr != nil {
		s.held.hold(r)
	}
	return aerr
}

// callRecord builds the audit record of a call.
func (s *Runtime) callRecord(c *Call, f *Failure, err error, refused bool, now time.Time) *audit.Record {
	r := &audit.Record{
		Time: c.start.UTC(), Event: audit.EventCall,
		RequestID: c.reqID, Session: c.session,
		Transport: c.who.Transport, Remote: c.who.Remote, Identity: c.who.String(),
		Auth: string(c.who.Method), Serial: c.who.Serial, TokenID: c.who.TokenID,
		Tool: c.def.name, Decision: audit.Allow, Status: c.Status,
		DurationMS: math.Round(float64(now.Sub(c.start).Microseconds())) / 1000,
		Paths:      c.paths, Cancelled: c.Cancelled(),
	}
	if len(r.Paths) > audit.MaxPaths {
		r.Paths, r.MorePaths = r.Paths[:audit.MaxPaths], len(r.Paths)-audit.MaxPaths
	}
	if c.SHA256 != "" {
		r.Content = &audit.Content{Size: c.Size, SHA256: c.SHA256}
	}
	if f != nil {
		r.Error = string(f.Type)
	}
	denied, isDenied := errors.AsType[*policy.Denied](err)
	switch {
	case isDenied:
		r.Decision, r.Reason = audit.Deny, denied.Rule
	case refused:
		r.Decision, r.Reason = audit.Deny, err.Error()
	case f != nil && denial(err, f) != "":
		r.Decision, r.Reason = audit.Deny, denial(err, f)
	case c.perms.Full():
		r.Reason = "full grants"
	case len(c.grants) > 0:
		names := make([]string, len(c.grants))
		for i, g := range c.grants {
			names[i] = g.String()
		}
		r.Reason = "granted by " + strings.Join(names, ", ")
	default:
		r.Reason = "tool granted"
	}
	return r
}

// AuthRefused records a refused TLS handshake or authentication, r (an
// audit record of event audit.EventAuth, without its time, request id and
// decision, which it fills in), in the audit log and in the counts of the
// peer's address: count refusals (at least one) of one burst, the latest of
// which code names. It warns about a burst of them (depotfs serve also logs
// each failure). It is safe for concurrent use and returns once the record
// is durable; the refusal stands whatever happens here.
func (s *Runtime) AuthRefused(r *audit.Record, count int, code string) {
	now := s.env.Now()
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time, r.RequestID, r.Decision = r.Time.UTC(), newRequestID(), audit.Deny
	key := "http:" + HostOf(r.Remote)
	n := max(count, 1)
	st := s.stats.update(key, func(st *IdentityStats) {
		st.AuthFailures += int64(n)
		st.Last = now
	})
	if s.limiter.Denial(key, now) {
		s.log.Warn("unusual pattern: a burst of failed authentications from one address",
			"remote", r.Remote, "failures", st.AuthFailures, "last_reason", code)
	}
	if n > 1 {
		r.Reason += fmt.Sprintf(" (%d refusals from this address in this burst; this is the latest)", n)
		r.Count = n
	}
	if s.audit != nil {
		if err := s.audit.Append(r); err != nil {
			s.log.Error("audit record of a refused authentication not written", "remote", r.Remote, "err", err)
		}
	}
}

// denial returns why a failed call is a refusal on security grounds,
// which is audited as decision deny so that "depotfs audit query
// --decision deny" finds it: a failure of type security (a path that
// escapes the depot, an upload URL of another identity), a Refusal marked
// Deny (a guessed upload URL), and an archive member that is neither a
// file nor a directory (a link, a device). It returns "" for any other
// failure.
func denial(err error, f *Failure) string {
	ref, isRef := errors.AsType[*Refusal](err)
	switch {
	case isRef && ref.Deny:
		return cmp.Or(ref.Audit, ref.Message)
	case f.Type == ErrorSecurity, errors.Is(err, archive.ErrUnsupported):
		return f.Message
	}
	return ""
}

// Perms returns what the caller of c may do, bounded by the server's
// policy, for requests that decide their own rights (a backup).
func (c *Call) Perms() policy.Set { return c.perms }

// maxUnaudited bounds the records of committed calls kept for a later
// append. Once the log fails, calls are refused before they touch the
// store, so only the calls already past that check (at most the calls in
// flight) can add one.
const maxUnaudited = 1024

// unaudited holds the records of calls that committed a change while the
// audit log could not take their record, oldest first: the next append
// writes them before its own, so the log ends up complete, in the order
// of the appends. It is safe for concurrent use.
type unaudited struct {
	any  atomic.Bool // fast path: most appends find nothing held
	mu   sync.Mutex
	recs []*audit.Record
}

// append writes r to a, after the records held, durably before it
// returns unless deferred is set (AppendDeferred); when r cannot be
// written and keep is set (its call committed a change), r is held instead
// of lost. It returns r's error.
func (u *unaudited) append(a Auditor, r *audit.Record, keep, deferred bool) error {
	err := u.flush(a)
	switch {
	case err != nil:
	case deferred:
		err = a.AppendDeferred(r)
	default:
		err = a.Append(r)
	}
	if err != nil && keep {
		u.hold(r)
	}
	return err
}

// flush writes the records held, stopping at the first failure.
func (u *unaudited) flush(a Auditor) error {
	if !u.any.Load() {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for len(u.recs) > 0 {
		if err := a.Append(u.recs[0]); err != nil {
			return err
		}
		u.recs = u.recs[1:]
	}
	u.any.Store(false)
	return nil
}

func (u *unaudited) hold(r *audit.Record) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.recs) < maxUnaudited {
		u.recs = append(u.recs, r)
	}
	u.any.Store(true)
}
