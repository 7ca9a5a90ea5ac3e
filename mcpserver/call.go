package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/internal/ratelimit"
)

// call is one tool call in progress. The handler fills in what it learns
// (the path, the size and hash of the content) so that the wrapper, the one
// place that knows a call's outcome, can count, audit and log it.
type call struct {
	def     toolDef
	tool    string
	profile Profile
	who     identity.Identity
	perms   policy.Set // what who may do, bounded by the server's policy
	key     string     // the identity's key for counts and rate limits
	start   time.Time
	now     func() time.Time // the server's clock (Options.Now)
	reqID   string
	// session is the MCP session id, "" when the transport has none.
	session string

	// args collects the argument problems and the clean paths the decoder
	// produced (decode); authorizeArgs checks those paths.
	args problems
	// store is the only way the tool body reaches the store: every
	// operation is checked against perms first (guard.go).
	store *guard

	argsDone  bool          // authorizeArgs ran
	argsErr   error         // its result
	grants    []grant.Grant // grants that allowed the paths checked
	paths     []string      // every path checked, for the audit record
	noted     map[string]bool
	committed bool          // the store accepted a write
	counts    IdentityStats // the identity's counts after this call

	path   string
	size   int64
	sha256 string
	status string
	attrs  []slog.Attr // further tool-specific log attributes
}

// decode parses the call's arguments as a JSON object, recording problems
// and decoded paths on the call. It returns nil when raw is not an object
// (a problem is recorded).
func (c *call) decode(raw json.RawMessage) *object {
	return decodeObject(raw, "arguments", "", &c.args)
}

// toolFunc is the body of a tool: it validates the raw arguments, does the
// work and returns the reply data, or an error the tool's reply shape turns
// into its error object (classify names its type in the log and audit).
type toolFunc func(ctx context.Context, c *call, args json.RawMessage) (reply, error)

// handler wraps a tool into an mcp-go handler that never returns a Go
// error: every outcome, including a panic, becomes a reply in the tool's
// shape (t.shape), and every call is counted, audited and logged once. It is
// the one way into a tool body, and it registers the tool's permissions
// (t.def) for the tool filter.
//
// A call is admitted by the caller's rate limit and its grants for the
// tool, then runs; every path argument is checked (before the first store
// access, or at the end for a call that never reached the store); a denial
// replaces whatever else the call would have reported. If the audit record
// cannot be written the call fails.
func (s *Server) handler(t tool) server.ToolHandlerFunc {
	def := t.def()
	s.defs[def.name] = def
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := s.newCall(ctx, def)
		c.profile = t.profile
		out, err := s.admit(c)
		if err == nil {
			out, err = s.run(ctx, c, t.run, req)
		}
		if derr := c.authorizeArgs(); derr != nil && !errors.Is(err, policy.ErrDenied) {
			out, err = reply{}, derr
		}

		var f *Failure
		if err != nil {
			failure := classify(err)
			f = &failure
		}
		if auditErr := s.finish(c, f, err); auditErr != nil {
			err = &auditError{err: auditErr}
		}
		if err == nil {
			res, encErr := t.shape.success(c, out)
			if encErr == nil {
				return res, nil
			}
			// Only an unencodable data value gets here: a bug, reported as
			// a system error without the data.
			s.log.Error("mcp reply not encodable", "tool", c.tool, "err", encErr)
			err = encErr
		}
		return t.shape.failure(c, err), nil
	}
}

// admit refuses a call before it runs: over the caller's call rate, or
// with a tool its grants do not cover (which mcp-go's tool filter normally
// refuses already).
func (s *Server) admit(c *call) (reply, error) {
	if ok, wait := s.limiter.Call(c.key, c.start); !ok {
		return reply{}, &rateError{what: "calls", retry: ratelimit.RetryAfter(wait), limits: s.limiter.Limits()}
	}
	return reply{}, c.perms.CheckTool(c.def.name, c.def.group)
}

// run calls fn, turning a panic into a system error so one bad call cannot
// take the server down.
func (s *Server) run(ctx context.Context, c *call, fn toolFunc, req mcp.CallToolRequest) (out reply, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("mcp tool panicked", "tool", c.tool, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic in %s: %v", c.tool, r)
		}
	}()
	return fn(ctx, c, rawArguments(req))
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
func (s *Server) logCall(c *call, f *Failure, err error) {
	attrs := []slog.Attr{
		slog.String("tool", c.tool),
		slog.String("identity", c.who.String()),
		slog.String("request_id", c.reqID),
		slog.Duration("duration", s.opts.Now().Sub(c.start)),
	}
	if c.profile != "" {
		attrs = append(attrs, slog.String("profile", string(c.profile)))
	}
	if c.path != "" {
		attrs = append(attrs, slog.String("path", c.path))
	}
	if c.sha256 != "" {
		attrs = append(attrs, slog.Int64("size", c.size), slog.String("sha256", c.sha256))
	}
	attrs = append(attrs, c.attrs...)
	level, msg := slog.LevelInfo, "mcp call"
	if f == nil {
		attrs = append(attrs, slog.String("outcome", "ok"))
		if c.status != "" {
			attrs = append(attrs, slog.String("status", c.status))
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

// commitContext returns the context for the write phase of a validated
// call. It keeps ctx's values but not its cancellation: once a call starts
// writing, it finishes even if the client goes away or the transport shuts
// down, bounded by Options.CommitTimeout, so a shutdown never cuts a call
// between its commit and its reply.
func (s *Server) commitContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), s.opts.CommitTimeout)
}

// applied waits until the mount shows revision rev, when Options.Applied is
// set. A failure does not undo the committed write; it becomes a warning.
func (s *Server) applied(ctx context.Context, c *call, rev uint64) []string {
	if s.opts.Applied == nil {
		return nil
	}
	if err := s.opts.Applied(ctx, rev); err != nil {
		s.log.Warn("mcp write not yet visible in the mount", "tool", c.tool, "path", c.path, "revision", rev, "err", err)
		return []string{fmt.Sprintf("The change is stored (revision %d), but the mount did not confirm it in time: a program reading the mount right now may still see the previous state. Repeat this call (it is idempotent) to wait again.", rev)}
	}
	return nil
}

// mountWarnings returns the warning every reply with a path carries when
// depotfs is not mounted.
func (s *Server) mountWarnings() []string {
	if s.opts.MountPoint != "" {
		return nil
	}
	return []string{"depotfs is not mounted on this host, so the reply has no mount_path: the file is stored but no program can read it at a host path until the depot is mounted."}
}
