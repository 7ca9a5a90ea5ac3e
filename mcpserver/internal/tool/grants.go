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
	"github.com/depotfs/depotfs/mcpserver/internal/rpcerr"
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
	// args is the tool's input schema, which the decoders of its calls
	// are checked against (Call.Parse).
	args *args.Schema
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
		s.unknownTool(ctx, id, name, c.perms)
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

// unknownTool replaces mcp-go's "tool 'x' not found" for a tools/call of a
// name the caller cannot call with a message that says how to fix the
// call: the name params.name lacks, or the nearest tool the caller may
// call. Only the caller's visible tools are named, so the reply reveals no
// tool the caller's grants (perms) hide.
func (s *Runtime) unknownTool(ctx context.Context, id any, name string, perms policy.Set) {
	var visible []string
	for _, d := range s.defs {
		if d.usableBy(perms) == nil {
			visible = append(visible, d.name)
		}
	}
	slices.Sort(visible)
	rpcerr.Set(ctx, id, mcp.JSONRPCErrorDetails{Code: mcp.INVALID_PARAMS, Message: unknownToolMessage(name, visible)})
}

// MissingNameMessage is the error of a tools/call without params.name,
// with example as the tool to name; both transports answer it.
func MissingNameMessage(example string) string {
	return fmt.Sprintf("tools/call needs params.name, the tool to call (for example %q) beside params.arguments; tools/list names the tools you may call", example)
}

// unknownToolMessage is the error of a call to name, which is none of
// visible.
func unknownToolMessage(name string, visible []string) string {
	if name == "" {
		example := "guide_cache_file"
		if len(visible) > 0 && !slices.Contains(visible, example) {
			example = visible[0]
		}
		return MissingNameMessage(example)
	}
	// name is already bounded by clip.String (the server's BeforeCallTool hook),
	// whose "…[N bytes, sha256:H]" tail names a huge name; quoting it whole
	// keeps that tail, where args.Quote would cut it off.
	if best := nearestTool(name, visible); best != "" {
		return fmt.Sprintf("tool %q not found; did you mean %q? tools/list names the tools you may call", name, best)
	}
	return fmt.Sprintf("tool %q not found; the tools you may call are %s", name, strings.Join(visible, ", "))
}

// nearestTool returns the tool of candidates that name most likely meant,
// or "" when none is close: the same name in another case or with other
// separators, a name that ends with it ("cache_file" for
// "guide_cache_file"), or one a few edits away.
func nearestTool(name string, candidates []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("-", "_", ".", "_", " ", "_", "/", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
	}
	n := norm(name)
	if n == "" {
		return ""
	}
	best, bestDist := "", max(2, len(n)/4)+1
	for _, c := range candidates {
		cn := norm(c)
		switch {
		case cn == n:
			return c
		case strings.HasSuffix(cn, "_"+n) || strings.HasSuffix(n, "_"+cn):
			if bestDist > 0 {
				best, bestDist = c, 0
			}
			continue
		}
		if d := editDistance(n, cn); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
