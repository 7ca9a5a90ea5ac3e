package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
)

// def is what the permission checks need to know of a tool: its name,
// the group a grant may name instead of the tool, and the access each of
// its path arguments needs. Every registered tool has one, and a path the
// decoder produces for an argument not listed here fails the call: a new
// path argument cannot go unchecked.
type def struct {
	name  string
	group string
	// paths maps a path argument, by its own name (the last part of the
	// field: "path", "name" for a listing's entries), to the access it
	// needs.
	paths map[string]grant.Access
}

// argName is the name under which def.paths lists a decoded field:
// "entries[2].entries[0].name" is "name".
func argName(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	return field
}

// VisibleTools is the tool filter of tools/list and tools/call: a caller
// sees, and may call, only the tools its grants cover (policy.Set.
// CoversTool). mcp-go refuses a call to a hidden tool as an unknown tool,
// before any handler runs; OnCallError audits that refusal.
func (s *Runtime) VisibleTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	who, _ := identity.FromContext(ctx)
	perms := s.policy.For(who)
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if def, ok := s.defs[t.Name]; ok && def.usableBy(perms) == nil {
			out = append(out, t)
		}
	}
	return out
}

// usableBy returns why perms do not cover the tool, nil when they do.
func (d def) usableBy(perms policy.Set) error {
	var accesses []grant.Access // each access the path arguments need, once
	for _, a := range d.paths {
		if !slices.Contains(accesses, a) {
			accesses = append(accesses, a)
		}
	}
	return perms.CheckToolUse(d.name, d.group, accesses)
}

// OnCallError audits a tools/call that mcp-go refused before any handler
// ran: a tool hidden from the caller, an unknown tool, a malformed
// request. Calls that reach a handler never get here (handlers return no Go
// error), so every call is audited exactly once.
func (s *Runtime) OnCallError(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
	if method != mcp.MethodToolsCall {
		return
	}
	var name string
	if req, ok := message.(*mcp.CallToolRequest); ok && req != nil {
		name = req.Params.Name
	}
	d, known := s.defs[name]
	c := s.NewCall(ctx, name, d.group)
	var reason error
	switch {
	case known && errors.Is(err, server.ErrToolNotFound):
		reason = d.usableBy(c.perms)
		if reason == nil {
			reason = fmt.Errorf("%w: tool %s refused by the MCP layer", args.ErrInvalid, name)
		}
	case errors.Is(err, server.ErrToolNotFound):
		reason = &policy.Denied{Tool: name, Rule: fmt.Sprintf("no such tool %s", args.Quote(name))}
		s.unknownTool(ctx, id, name)
	default:
		reason = fmt.Errorf("%w: refused by the MCP layer: %v", args.ErrInvalid, err)
	}
	if err := s.Finish(c, reason); err != nil {
		s.log.Error("audit record of a refused call not written", "tool", name, "identity", c.who.String(), "err", err)
	}
}

// MayWrite reports whether who may write the depot path p through any of
// its tools, within the server's policy (see Call.MayWrite).
func (s *Runtime) MayWrite(who identity.Identity, p string) bool {
	clean, err := depotpath.Clean(p)
	if err != nil {
		return false
	}
	return s.policy.For(who).AnyTool(clean, grant.Write)
}

// authorizeArgs checks every path the decoder produced against the
// caller's grants, with the access the tool declares for its argument. It
// runs once per call: before the first store access (Store) or, for a call
// that never reached the store, when the call ends, so every path argument
// of every call is checked. The paths are all noted for the audit record
// first, so a denied call's record lists them all.
func (c *Call) authorizeArgs() error {
	if c.argsDone {
		return c.argsErr
	}
	c.argsDone = true
	for _, a := range c.args.Paths() {
		c.Note(a.Path)
	}
	for _, a := range c.args.Paths() {
		access, ok := c.def.paths[argName(a.Field)]
		if !ok {
			c.argsErr = fmt.Errorf("tool %s decoded the path argument %s without declaring the access it needs", c.def.name, a.Field)
			return c.argsErr
		}
		if err := c.authorize(a.Path, access); err != nil {
			c.argsErr = err
			return err
		}
	}
	return nil
}

// authorize checks one clean path against the caller's grants, noting it
// for the audit and remembering the decision.
func (c *Call) authorize(p string, access grant.Access) error {
	c.Note(p)
	g, err := c.perms.Check(c.def.name, c.def.group, p, access)
	if err != nil {
		return err
	}
	if !c.perms.Full() && !slices.Contains(c.grants, g) {
		c.grants = append(c.grants, g)
	}
	return nil
}

// Note adds p to the paths the audit record of c lists, once.
func (c *Call) Note(p string) {
	if c.noted == nil {
		c.noted = map[string]bool{}
	}
	if !c.noted[p] {
		c.noted[p] = true
		c.paths = append(c.paths, p)
	}
}
