package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/mcpserver/identity"
)

// call is one tool call in progress. The handler fills in what it learns
// (the path, the size and hash of the content) so that the wrapper, the one
// place that knows a call's outcome, can log it.
type call struct {
	tool    string
	profile Profile
	who     identity.Identity
	start   time.Time

	path   string
	size   int64
	sha256 string
	status string
	attrs  []slog.Attr // further tool-specific log attributes
}

// toolFunc is the body of a tool: it validates the raw arguments, does the
// work and returns the reply data, or an error the tool's reply shape turns
// into its error object (classify names its type in the log).
type toolFunc func(ctx context.Context, c *call, args json.RawMessage) (reply, error)

// handler wraps a tool into an mcp-go handler that never returns a Go
// error: every outcome, including a panic, becomes a reply in the tool's
// shape (t.shape), and every call is logged once. It is the one way into a
// tool body: every registered tool goes through it.
func (s *Server) handler(t tool) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		who, _ := identity.FromContext(ctx)
		c := &call{tool: t.spec.Name, profile: t.profile, who: who, start: time.Now()}
		out, err := s.run(ctx, c, t.run, req)
		if err == nil {
			res, encErr := t.shape.success(c, out)
			if encErr == nil {
				s.logCall(c, nil, nil)
				return res, nil
			}
			// Only an unencodable data value gets here: a bug, reported as
			// a system error without the data.
			s.log.Error("mcp reply not encodable", "tool", c.tool, "err", encErr)
			err = encErr
		}
		f := classify(err)
		s.logCall(c, &f, err)
		return t.shape.failure(c, err), nil
	}
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
		slog.String("profile", string(c.profile)),
		slog.String("identity", c.who.String()),
		slog.Duration("duration", time.Since(c.start)),
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
