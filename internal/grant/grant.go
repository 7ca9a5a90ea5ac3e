// Package grant defines what an identity may do: a grant names a tool or
// tool group, a depot path prefix (matched on whole components) and an
// access level. Grants come from certificates, tokens or flags; the server's
// own policy bounds them. The package is pure data and logic, safe for
// concurrent use, and imports no transport.
package grant

import (
	"errors"
	"fmt"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// Access is what a grant allows on its paths.
type Access uint8

// Access levels. ReadWrite is Read|Write.
const (
	Read      Access = 1 << iota // read content, list, stat
	Write                        // create, update, remove
	ReadWrite = Read | Write
)

func (a Access) String() string {
	if a >= Read && a <= ReadWrite {
		return [...]string{Read: "r", Write: "w", ReadWrite: "rw"}[a]
	}
	return fmt.Sprintf("access(%d)", uint8(a))
}

// AnyTool in a grant's Tool matches every tool.
const AnyTool = "*"

// Grant allows Access on paths within Prefix through Tool, which is a tool
// name ("guide_cache_file"), a tool group ("guide", "provider", "fs") or
// AnyTool.
type Grant struct {
	Tool   string
	Prefix string // a clean depot path
	Access Access
}

// ErrSyntax reports a grant that cannot be parsed.
var ErrSyntax = errors.New("invalid grant")

// Parse reads a grant written as TOOL:PREFIX:ACCESS, for example
// "guide:/projects/a:rw" or "*:/:r". The prefix is cleaned with
// depotpath.Clean and must not be empty.
func Parse(s string) (Grant, error) {
	first := strings.IndexByte(s, ':')
	last := strings.LastIndexByte(s, ':')
	if first <= 0 || last == first {
		return Grant{}, fmt.Errorf("%w %q: want TOOL:PREFIX:ACCESS, such as guide:/projects/a:rw", ErrSyntax, s)
	}
	tool, prefix, access := s[:first], s[first+1:last], s[last+1:]
	a, ok := map[string]Access{"r": Read, "w": Write, "rw": ReadWrite, "wr": ReadWrite}[access]
	if !ok {
		return Grant{}, fmt.Errorf("%w %q: access %q must be r, w or rw", ErrSyntax, s, access)
	}
	clean, err := depotpath.Clean(prefix)
	if err != nil || !strings.HasPrefix(prefix, "/") {
		return Grant{}, fmt.Errorf("%w %q: prefix must be an absolute depot path", ErrSyntax, s)
	}
	return Grant{Tool: tool, Prefix: clean, Access: a}, nil
}

// String returns the grant in the form Parse reads.
func (g Grant) String() string { return g.Tool + ":" + g.Prefix + ":" + g.Access.String() }

// Allows reports whether g permits access to path (clean) through the tool
// named tool, which belongs to group.
func (g Grant) Allows(tool, group, path string, access Access) bool {
	if g.Tool != AnyTool && g.Tool != tool && g.Tool != group {
		return false
	}
	return g.Access&access == access && depotpath.Within(path, g.Prefix)
}

// CoversTool reports whether g concerns tool (in group) at all, for
// deciding which tools an identity may see in tools/list.
func (g Grant) CoversTool(tool, group string) bool {
	return g.Tool == AnyTool || g.Tool == tool || g.Tool == group
}
