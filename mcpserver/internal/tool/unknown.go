package tool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/rpcerr"
)

// unknownTool replaces mcp-go's "tool 'x' not found" for a tools/call of a
// name the caller cannot call with a message that says how to fix the
// call: the name params.name lacks, or the nearest tool the caller may
// call. Only the caller's visible tools are named, so the reply reveals no
// tool the caller's grants hide.
func (s *Runtime) unknownTool(ctx context.Context, id any, name string) {
	who, _ := identity.FromContext(ctx)
	perms := s.policy.For(who)
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
