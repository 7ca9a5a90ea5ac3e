package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/mcpserver/internal/lift"
	"github.com/depotfs/depotfs/store"
)

// Call is one tool call in progress, the one thing besides its arguments a
// tool body receives. The body fills in what it learns (Path, Size,
// SHA256, Status, Attrs) so that the pipeline, the one place that knows a
// call's outcome, can count, audit and log it. A Call belongs to one call;
// its Store is safe for that call's goroutines.
type Call struct {
	// Path is the depot path the call is about, for the log, the audit
	// record and fs error details.
	Path string
	// Size and SHA256 describe content the call stored or read; SHA256
	// empty: none.
	Size   int64
	SHA256 string
	// Status is the outcome logged on success (a cache status, a count).
	Status string
	// Attrs are further tool-specific log attributes.
	Attrs []slog.Attr

	ctx     context.Context // the call's, to record a cancellation
	rt      *Runtime
	def     def
	profile Profile
	who     identity.Identity
	perms   policy.Set // what who may do, bounded by the server's policy
	key     string     // the identity's key for its counts (see Key)
	tenant  string     // the tenant its limits count against (see internal/tenant)
	start   time.Time
	reqID   string
	// session is the MCP session id, "" when the transport has none.
	session string

	// args collects the argument problems and the clean paths the decoder
	// produced (Decode); authorizeArgs checks those paths.
	args args.Problems
	// store is the only way the tool body reaches the store: every
	// operation is checked against perms first (store.go).
	store *Store

	argsDone  bool          // authorizeArgs ran
	argsErr   error         // its result
	grants    []grant.Grant // grants that allowed the paths checked
	paths     []string      // every path checked, for the audit record
	noted     map[string]bool
	committed bool          // the store accepted a write
	counts    IdentityStats // the identity's counts after this call
	// readOnly: the call cannot change the depot (a door's request), so
	// its record, when allowed, need not be durable before the reply.
	readOnly bool
	// atCommit: the call's outcome is that of its next whole-file write
	// (RecordAtCommit), so its record may be written while it commits.
	atCommit bool
	// early is the record written while the call's write committed, set
	// by the store's commit hook before the write returns; Finish settles
	// it.
	early *audit.Record
}

// RecordAtCommit declares that the call's outcome is that of its next
// whole-file write (Store.Put): nothing after it can fail the call. Its
// audit record is then written, and its fsync started, once the write
// has run and while it commits, when the audit log can do that; the reply
// still waits until the record and the write are durable.
func (c *Call) RecordAtCommit() { c.atCommit = true }

// Decode parses the call's arguments as a JSON object, recording problems
// and decoded paths on the call (Args). It returns nil when raw is not an
// object (a problem is recorded).
func (c *Call) Decode(raw json.RawMessage) *args.Object {
	return args.Decode(raw, "arguments", "", &c.args)
}

// Args returns the problems and decoded paths of the call's arguments.
func (c *Call) Args() *args.Problems { return &c.args }

// OwnArgs returns an empty problems list for arguments whose paths the
// body checks itself, through the guarded store, instead of the pipeline
// (which checks those of Args against the tool's path declarations). Its
// getters read the tool's input schema like those of Args.
func (c *Call) OwnArgs() *args.Problems {
	p := new(args.Problems)
	p.Check(c.def.args)
	return p
}

// Store returns the guarded store: the only way a tool body reaches the
// depot.
func (c *Call) Store() *Store { return c.store }

// Name returns the name of the tool called.
func (c *Call) Name() string { return c.def.name }

// Who returns the caller's identity.
func (c *Call) Who() identity.Identity { return c.who }

// Tenant returns the tenant of the caller: what its limits count against
// (see internal/tenant).
func (c *Call) Tenant() string { return c.tenant }

// MayWrite reports whether the caller may write the depot path p through
// any of its tools, within the server's policy: the question "may this
// caller answer a request for p" that code outside one tool's own writes
// asks (the pending-requests list filters by it). p is cleaned first; an
// invalid path may not be written. The writes themselves are checked by the
// guarded store, per tool.
func (c *Call) MayWrite(p string) bool { return c.rt.MayWrite(c.who, p) }

// Handler wraps a tool into an mcp-go handler that never returns a Go
// error: every outcome, including a panic, becomes a reply in the tool's
// shape (t.Shape), and every call is counted, audited and logged once (see
// Serve). It is the one way into a tool body, and it registers the tool's
// permissions for the tool filter (VisibleTools).
func (s *Runtime) Handler(t Tool) server.ToolHandlerFunc {
	s.defs[t.Spec.Name] = t.def()
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, _ := s.Serve(ctx, t, func(c *Call) (Reply, error) {
			// Long strings the transport lifted out of the request (package
			// lift) go back before the body decodes its arguments.
			return t.Run(ctx, c, lift.FromContext(ctx).Restore(rawArguments(req)))
		})
		return res, nil
	}
}

// Serve runs body as a request of tool t that is not an MCP tool call, such
// as the HTTP PUT of a raw upload begun by guide_begin_upload, through the
// same pipeline as a call of t: the same admission, grants, audit record,
// log line, reply shape and rules. It returns the reply and whether the
// request succeeded.
//
// A request is admitted by the caller's rate limit and its grants for the
// tool, then runs; every path argument is checked (before the first store
// access, or at the end for a request that never reached the store); a
// denial replaces whatever else the request would have reported. If the
// audit record cannot be written the request fails, unless it committed a
// change: then it succeeds with a warning, and its record is written by a
// later append.
func (s *Runtime) Serve(ctx context.Context, t Tool, body func(c *Call) (Reply, error)) (*mcp.CallToolResult, bool) {
	c := s.NewCall(ctx, t.Spec.Name, string(t.Profile))
	if d, ok := s.defs[t.Spec.Name]; ok {
		c.def = d // parsed once, when the tool was registered
	} else {
		c.def = t.def()
	}
	c.args.Check(c.def.args)
	c.profile = t.Profile
	out, err := s.admit(c)
	if err == nil {
		out, err = s.run(c, body)
	}
	if derr := c.authorizeArgs(); derr != nil && !errors.Is(err, policy.ErrDenied) {
		out, err = Reply{}, derr
	}
	if err == nil {
		out.Warnings = append(out.Warnings, c.args.Warnings()...)
	}
	if auditErr := s.Finish(c, err); auditErr != nil {
		if err == nil && c.committed {
			// The change is stored: the reply says so, never an error
			// (which an agent would retry).
			out.Warnings = append(out.Warnings, unauditedWarning)
		} else {
			err = &auditError{err: auditErr}
		}
	}
	if err == nil {
		res, encErr := t.Shape.Success(c, out)
		if encErr == nil {
			return res, true
		}
		// Only an unencodable data value gets here: a bug, reported as a
		// system error without the data.
		s.log.Error("mcp reply not encodable", "tool", c.def.name, "err", encErr)
		err = encErr
	}
	return t.Shape.Failure(c, err), false
}

// unauditedWarning is the warning of a call whose change was stored while
// the audit log could not take its record.
const unauditedWarning = "The change is stored, but depotfs could not write this call's audit record yet (it keeps it, and writes it once the audit log works again); until then depotfs refuses further calls with a system error. Do not repeat this call."

// rateLimited reports whether the rate limits apply to c's caller: an
// authenticated identity, or any caller with Env.RateLocal. A local caller
// without a credential is the user who runs depotfs; a bulk push of theirs
// is never refused unless the operator says so.
func (c *Call) rateLimited() bool { return c.who.Authenticated() || c.rt.env.RateLocal }

// admit refuses a call before it runs: over the caller's call rate, or
// with a tool its grants do not cover (which mcp-go's tool filter normally
// refuses already).
func (s *Runtime) admit(c *Call) (Reply, error) {
	if c.rateLimited() {
		if ok, wait := s.limiter.Call(c.tenant, c.start); !ok {
			return Reply{}, &RateError{what: "calls", Retry: ratelimit.RetryAfter(wait), limits: s.limiter.Limits()}
		}
	}
	return Reply{}, c.perms.CheckTool(c.def.name, c.def.group)
}

// run calls body, turning a panic into a system error so one bad call
// cannot take the server down.
func (s *Runtime) run(c *Call, body func(c *Call) (Reply, error)) (out Reply, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcp tool panicked", "tool", c.def.name, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic in %s: %v", c.def.name, r)
		}
	}()
	return body(c)
}

// rawArguments returns the arguments as the client sent them, so decoding
// sees the exact JSON (types, duplicates, invalid text) rather than mcp-go's
// loosely typed map.
func rawArguments(req mcp.CallToolRequest) json.RawMessage {
	if len(req.Params.RawArguments) > 0 {
		return req.Params.RawArguments
	}
	if req.Params.Arguments == nil {
		return nil
	}
	raw, err := json.Marshal(req.Params.Arguments)
	if err != nil {
		return json.RawMessage(`"unencodable arguments"`)
	}
	return raw
}

// logCall writes the one log line of a call: who called which tool on what,
// and how it ended. Content is never logged, only its size and hash.
func (s *Runtime) logCall(c *Call, f *Failure, err error) {
	attrs := []slog.Attr{
		slog.String("tool", c.def.name),
		slog.String("identity", c.who.String()),
		slog.String("request_id", c.reqID),
		slog.Duration("duration", s.env.Now().Sub(c.start)),
	}
	if c.profile != "" {
		attrs = append(attrs, slog.String("profile", string(c.profile)))
	}
	if c.Path != "" {
		attrs = append(attrs, slog.String("path", c.Path))
	}
	if c.SHA256 != "" {
		attrs = append(attrs, slog.Int64("size", c.Size), slog.String("sha256", c.SHA256))
	}
	attrs = append(attrs, c.Attrs...)
	if c.Cancelled() {
		attrs = append(attrs, slog.Bool("cancelled", true))
	}
	level, msg := slog.LevelInfo, "mcp call"
	if f == nil {
		attrs = append(attrs, slog.String("outcome", "ok"))
		if c.Status != "" {
			attrs = append(attrs, slog.String("status", c.Status))
		}
	} else {
		attrs = append(attrs, slog.String("outcome", string(f.Type)), slog.String("err", err.Error()))
		level = slog.LevelWarn
		if f.Type == ErrorSystem {
			level = slog.LevelError
		}
	}
	s.log.LogAttrs(context.Background(), level, msg, attrs...)
}

// Auditor keeps the audit log; *audit.Log implements it. Both methods are
// called from many goroutines at once.
type Auditor interface {
	// Append writes one record durably, setting its Seq, Prev and Hash.
	Append(r *audit.Record) error
	// AppendDeferred writes one record in order, as Append does, and
	// returns before it is durable (audit.Log.AppendDeferred): for
	// allowed calls that changed nothing.
	AppendDeferred(r *audit.Record) error
	// Err reports a failure of the log that makes it refuse records, or
	// nil.
	Err() error
}

// EarlyAuditor is an Auditor that can write a record while the change it
// describes commits (audit.Log.AppendEarly), so that the record's flush
// and the store's overlap; *audit.Log implements it. Calls that declare
// RecordAtCommit use it when the Runtime's Auditor is one.
type EarlyAuditor interface {
	Auditor
	// AppendEarly writes r before its change is durable and starts its
	// flush; the caller settles it with Confirm or Amend.
	AppendEarly(r *audit.Record) error
	// Committed lets the checkpoint pass early, whose change is durable,
	// without waiting; it must not block.
	Committed(early *audit.Record)
	// Confirm returns once early, whose change is durable, is durable and
	// checkpointed; r, the call's record as of its end, is not written.
	Confirm(early, r *audit.Record) error
	// Amend writes r, the outcome of early's call whose change did not
	// become durable, and returns once it is durable and checkpointed.
	Amend(early, r *audit.Record) error
}

// Runtime is the server's side of the tool pipeline: the store, the
// policy, the rate limiter, the per-identity counts and the audit log that
// every call goes through. The server makes one in New, registers each
// tool through Handler (before serving), and hands nothing of it to tool
// bodies but their Call. After registration it is safe for concurrent use.
type Runtime struct {
	st      store.Store // reached only through Store and View
	env     *Env
	policy  *policy.Host
	audit   Auditor
	held    unaudited // records of committed calls the log could not take yet
	limiter *ratelimit.Limiter
	log     *slog.Logger
	stats   identityStats
	defs    map[string]def // every registered tool's permissions, by name; written only while registering
	// streaming is the bytes of raw uploads received and not yet
	// committed or dropped (see intake).
	streaming atomic.Int64
	// snapshotMu makes counting a caller's snapshots and creating one a
	// single step (Store.CreateSnapshot).
	snapshotMu sync.Mutex
}

// NewRuntime returns the pipeline over st. env is shared with the tool
// bodies; p bounds every caller's grants; a nil audit keeps no audit log;
// rate limits calls and content bytes per identity (see ratelimit).
func NewRuntime(st store.Store, env *Env, p *policy.Host, audit Auditor, rate ratelimit.Limits) *Runtime {
	return &Runtime{
		st: st, env: env, policy: p, audit: audit,
		limiter: ratelimit.New(rate), log: env.Logger,
		defs: map[string]def{},
	}
}
