// Package policy decides whether a caller may use a tool on a depot path:
// the caller's grants (package grant, carried by its identity) intersected
// with the server's own policy, the --allow and --deny prefixes of the host.
// A mis-issued credential can therefore never exceed what the host permits.
//
// The package is pure logic over values: it does no I/O, holds no state
// beyond what New is given, and every type is safe for concurrent use.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// ErrDenied is wrapped by every *Denied: the call is outside the caller's
// grants or the server's policy.
var ErrDenied = errors.New("permission denied")

// ErrPrefix reports an --allow or --deny prefix that is not an absolute
// depot path.
var ErrPrefix = errors.New("invalid policy prefix")

// Denied says which rule refused an access. Its message names the rule in
// depot terms only (tools, depot paths, grants), never host details, so it
// may be shown to the caller.
type Denied struct {
	Tool   string
	Path   string
	Access grant.Access
	// Rule is the reason in words, for example "no grant allows write to
	// /projects/abc via guide_cache_file; grants: guide:/projects/a:rw".
	Rule string
}

func (e *Denied) Error() string { return e.Rule }

// Unwrap returns ErrDenied.
func (e *Denied) Unwrap() error { return ErrDenied }

// Host is the server's own policy: the depot prefixes calls may touch at
// all (Allow) and those no call may touch (Deny). It is immutable once
// made and safe for concurrent use.
type Host struct {
	allow []string
	deny  []string
}

// NewHost returns the host policy for the given prefixes, each cleaned
// with depotpath.Clean and required to be absolute. No allow prefix means
// "/" (everything).
func NewHost(allow, deny []string) (*Host, error) {
	h := &Host{}
	var err error
	if h.allow, err = cleanPrefixes("allow", allow); err != nil {
		return nil, err
	}
	if h.deny, err = cleanPrefixes("deny", deny); err != nil {
		return nil, err
	}
	if len(h.allow) == 0 {
		h.allow = []string{depotpath.Root}
	}
	return h, nil
}

func cleanPrefixes(what string, in []string) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, p := range in {
		clean, err := depotpath.Clean(p)
		if err != nil || !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("%w: --%s %q: want an absolute depot path such as /projects", ErrPrefix, what, p)
		}
		out = append(out, clean)
	}
	return out, nil
}

// Allow returns the allowed prefixes, cleaned. The caller must not modify
// the slice.
func (h *Host) Allow() []string { return h.allow }

// Deny returns the denied prefixes, cleaned. The caller must not modify
// the slice.
func (h *Host) Deny() []string { return h.deny }

// For returns the permissions of id under this host policy.
func (h *Host) For(id identity.Identity) Set {
	if id.Full {
		return Set{host: h, full: true}
	}
	return Set{host: h, grants: id.Grants}
}

// Set is what one caller may do: its grants (or full grants) bounded by the
// host policy. It is a value, safe to copy and to use concurrently.
type Set struct {
	host   *Host
	full   bool
	grants []grant.Grant
}

// Full reports whether the caller's credential grants everything (still
// bounded by the host policy).
func (s Set) Full() bool { return s.full }

// effective returns the grants as they apply: Full as one grant of
// everything.
func (s Set) effective() []grant.Grant {
	if s.full {
		return []grant.Grant{{Tool: grant.AnyTool, Prefix: depotpath.Root, Access: grant.ReadWrite}}
	}
	return s.grants
}

// CoversTool reports whether the caller may use tool (of group) on some
// path at all: a grant names it and its prefix meets an allowed prefix
// that is not entirely denied. Tools it does not cover are hidden from the
// caller's tools/list and refused on tools/call.
func (s Set) CoversTool(tool, group string) bool {
	return slices.ContainsFunc(s.effective(), func(g grant.Grant) bool {
		return g.CoversTool(tool, group) && s.host.reaches(g.Prefix)
	})
}

// CheckTool is CoversTool as an error: nil, or a *Denied naming the
// caller's grants.
func (s Set) CheckTool(tool, group string) error {
	if s.CoversTool(tool, group) {
		return nil
	}
	return &Denied{Tool: tool, Rule: fmt.Sprintf("no grant covers tool %s (group %s) on a path the server allows; grants: %s", tool, group, s)}
}

// CheckToolUse is CheckTool for a tool that needs each of accesses on some
// path (its path arguments' accesses): a read-only caller cannot use a
// tool that writes, so it is hidden from that caller's tools/list and
// refused on tools/call with a *Denied naming the missing access.
func (s Set) CheckToolUse(tool, group string, accesses []grant.Access) error {
	if err := s.CheckTool(tool, group); err != nil {
		return err
	}
	for _, a := range accesses {
		if !slices.ContainsFunc(s.effective(), func(g grant.Grant) bool {
			return g.CoversTool(tool, group) && g.Access&a == a && s.host.reaches(g.Prefix)
		}) {
			return &Denied{Tool: tool, Access: a, Rule: fmt.Sprintf("no grant allows %s through tool %s on any path the server allows; grants: %s", AccessWords(a), tool, s)}
		}
	}
	return nil
}

// reaches reports whether some path within prefix is allowed and not
// denied by the host.
func (h *Host) reaches(prefix string) bool {
	// Where one of two clean paths is within the other, the deeper one
	// (their meet) starts with the other, so it is the greater string.
	return slices.ContainsFunc(h.allow, func(a string) bool {
		return (depotpath.Within(prefix, a) || depotpath.Within(a, prefix)) && !h.denied(max(prefix, a))
	})
}

// deniedBy returns the deny prefix covering p, or "".
func (h *Host) deniedBy(p string) string {
	for _, d := range h.deny {
		if depotpath.Within(p, d) {
			return d
		}
	}
	return ""
}

// denied reports whether a deny prefix covers p.
func (h *Host) denied(p string) bool { return h.deniedBy(p) != "" }

// allowed reports whether p lies within an allowed prefix.
func (h *Host) allowed(p string) bool {
	return slices.ContainsFunc(h.allow, func(a string) bool { return depotpath.Within(p, a) })
}

// Check decides whether the caller may have access to the clean depot path
// through tool (of group). It returns the grant that allows it, or a
// *Denied naming the rule that refuses it. The host policy is checked
// first, so a denied prefix is reported as such whatever the grants say.
func (s Set) Check(tool, group, path string, access grant.Access) (grant.Grant, error) {
	deny := func(rule string) (grant.Grant, error) {
		return grant.Grant{}, &Denied{Tool: tool, Path: path, Access: access, Rule: rule}
	}
	if d := s.host.deniedBy(path); d != "" {
		return deny(fmt.Sprintf("the server's policy denies %s (denied prefix %s)", path, d))
	}
	if !s.host.allowed(path) {
		return deny(fmt.Sprintf("the server's policy does not allow %s (allowed prefixes: %s)", path, strings.Join(s.host.allow, ", ")))
	}
	for _, g := range s.effective() {
		if g.Allows(tool, group, path, access) {
			return g, nil
		}
	}
	return deny(fmt.Sprintf("no grant allows %s to %s via %s; grants: %s", AccessWords(access), path, tool, s))
}

// Explicit reports whether the caller may have access to path through
// tool by a grant that names tool itself, or by full grants: a group or
// the * wildcard does not count. Operator actions (a backup, which copies
// the whole depot and the audit log's key) need a grant given for them.
func (s Set) Explicit(tool, path string, access grant.Access) bool {
	if s.full {
		return true
	}
	return slices.ContainsFunc(s.grants, func(g grant.Grant) bool {
		return g.Tool == tool && g.Access&access == access && depotpath.Within(path, g.Prefix)
	})
}

// AnyTool reports whether some grant allows access to path through any
// tool, within the host policy. It answers "may this caller write here at
// all", for decisions that are not tied to one tool.
func (s Set) AnyTool(path string, access grant.Access) bool {
	if s.host.denied(path) || !s.host.allowed(path) {
		return false
	}
	return slices.ContainsFunc(s.effective(), func(g grant.Grant) bool {
		return g.Access&access == access && depotpath.Within(path, g.Prefix)
	})
}

// Reaches reports whether some grant allows access to a path within
// prefix, or to prefix itself, through any tool, within the host policy:
// whether a caller watching prefix may see anything there at all (each
// path it sees is then checked with AnyTool).
func (s Set) Reaches(prefix string, access grant.Access) bool {
	return slices.ContainsFunc(s.effective(), func(g grant.Grant) bool {
		if g.Access&access != access {
			return false
		}
		meet := max(prefix, g.Prefix) // the deeper of two paths one within the other
		return (depotpath.Within(prefix, g.Prefix) || depotpath.Within(g.Prefix, prefix)) && s.host.reaches(meet)
	})
}

// String lists the caller's grants as TOOL:PREFIX:ACCESS, comma-separated;
// "all (full grants)" for full grants and "none" for none.
func (s Set) String() string {
	if s.full {
		return "all (full grants)"
	}
	if len(s.grants) == 0 {
		return "none"
	}
	parts := make([]string, len(s.grants))
	for i, g := range s.grants {
		parts[i] = g.String()
	}
	return strings.Join(parts, ", ")
}

// AccessWords names an access level in a sentence: "read", "write" or
// "read and write".
func AccessWords(a grant.Access) string {
	if a >= grant.Read && a <= grant.ReadWrite {
		return [...]string{grant.Read: "read", grant.Write: "write", grant.ReadWrite: "read and write"}[a]
	}
	return a.String()
}
