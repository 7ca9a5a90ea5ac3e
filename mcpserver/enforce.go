package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
)

// toolDef is what the permission checks need to know of a tool: its name,
// the group a grant may name instead of the tool, and the access each of
// its path arguments needs. Every registered tool has one (New panics
// otherwise), and a path the decoder produces for an argument not listed
// here fails the call: a new path argument cannot go unchecked.
type toolDef struct {
	name  string
	group string
	// paths maps a path argument, by its own name (the last part of the
	// field: "path", "name" for a listing's entries), to the access it
	// needs.
	paths map[string]grant.Access
}

// argName is the name under which toolDef.paths lists a decoded field:
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

// visibleTools is the tool filter of tools/list and tools/call: a caller
// sees, and may call, only the tools its grants cover (policy.Set.
// CoversTool). mcp-go refuses a call to a hidden tool as an unknown tool,
// before any handler runs; onCallError audits that refusal.
func (s *Server) visibleTools(ctx context.Context, tools []mcp.Tool) []mcp.Tool {
	who, _ := identity.FromContext(ctx)
	perms := s.opts.Policy.For(who)
	out := make([]mcp.Tool, 0, len(tools))
	for _, t := range tools {
		if def, ok := s.defs[t.Name]; ok && perms.CoversTool(def.name, def.group) {
			out = append(out, t)
		}
	}
	return out
}

// onCallError audits a tools/call that mcp-go refused before any handler
// ran: a tool hidden from the caller, an unknown tool, a malformed
// request. Calls that reach a handler never get here (handlers return no Go
// error), so every call is audited exactly once.
func (s *Server) onCallError(ctx context.Context, _ any, method mcp.MCPMethod, message any, err error) {
	if method != mcp.MethodToolsCall {
		return
	}
	var name string
	if req, ok := message.(*mcp.CallToolRequest); ok && req != nil {
		name = req.Params.Name
	}
	def, known := s.defs[name]
	if !known {
		def = toolDef{name: name}
	}
	c := s.newCall(ctx, def)
	var reason error
	switch {
	case known && errors.Is(err, server.ErrToolNotFound):
		reason = c.perms.CheckTool(def.name, def.group)
		if reason == nil {
			reason = fmt.Errorf("%w: tool %s refused by the MCP layer", errArgs, name)
		}
	case errors.Is(err, server.ErrToolNotFound):
		reason = &policy.Denied{Tool: name, Rule: fmt.Sprintf("no such tool %s", quote(name))}
	default:
		reason = fmt.Errorf("%w: refused by the MCP layer: %v", errArgs, err)
	}
	f := classify(reason)
	if err := s.finish(c, &f, reason); err != nil {
		s.log.Error("audit record of a refused call not written", "tool", name, "identity", c.who.String(), "err", err)
	}
}

// mayWrite reports whether the caller in ctx may write the depot path p
// through any of its tools, within the server's policy: the question "may
// this caller answer a request for p" that code outside one tool's own
// writes asks (the pending-requests list filters by it). p is cleaned
// first; an invalid path may not be written. The writes themselves are
// checked by the guard, per tool.
func (s *Server) mayWrite(ctx context.Context, p string) bool {
	clean, err := depotpath.Clean(p)
	if err != nil {
		return false
	}
	who, _ := identity.FromContext(ctx)
	return s.opts.Policy.For(who).AnyTool(clean, grant.Write)
}

// authorizeArgs checks every path the decoder produced against the
// caller's grants, with the access the tool declares for its argument. It
// runs once per call: before the first store access (guard) or, for a call
// that never reached the store, when the call ends, so every path argument
// of every call is checked. The paths are all noted for the audit record
// first, so a denied call's record lists them all.
func (c *call) authorizeArgs() error {
	if c.argsDone {
		return c.argsErr
	}
	c.argsDone = true
	for _, a := range c.args.paths {
		c.note(a.path)
	}
	for _, a := range c.args.paths {
		access, ok := c.def.paths[argName(a.field)]
		if !ok {
			c.argsErr = fmt.Errorf("tool %s decoded the path argument %s without declaring the access it needs", c.tool, a.field)
			return c.argsErr
		}
		if err := c.authorize(a.path, access); err != nil {
			c.argsErr = err
			return err
		}
	}
	return nil
}

// authorize checks one clean path against the caller's grants, noting it
// for the audit and remembering the decision.
func (c *call) authorize(p string, access grant.Access) error {
	c.note(p)
	g, err := c.perms.Check(c.def.name, c.def.group, p, access)
	if err != nil {
		return err
	}
	if !c.perms.Full() && !containsGrant(c.grants, g) {
		c.grants = append(c.grants, g)
	}
	return nil
}

func containsGrant(gs []grant.Grant, g grant.Grant) bool {
	for _, x := range gs {
		if x == g {
			return true
		}
	}
	return false
}

// note adds p to the paths the audit record lists, once.
func (c *call) note(p string) {
	if c.noted == nil {
		c.noted = map[string]bool{}
	}
	if !c.noted[p] {
		c.noted[p] = true
		c.paths = append(c.paths, p)
	}
}
