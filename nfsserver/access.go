package nfsserver

import (
	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/policy"
)

// Tool and Group are the names grants give the NFS server
// (TOOL:PREFIX:r, with TOOL "nfs" or "*"), and audit records carry.
const (
	Tool  = "nfs"
	Group = "nfs"
)

// access decides what the export shows, from the operator's grants
// within the host policy. Immutable; safe for concurrent use.
type access struct {
	prefix string
	set    policy.Set
	grants []grant.Grant
}

// readable reports whether depot path p may be read: a grant covers it
// within the export prefix.
func (a access) readable(p string) bool {
	if !depotpath.Within(p, a.prefix) {
		return false
	}
	_, err := a.set.Check(Tool, Group, p, grant.Read)
	return err == nil
}

// visible reports whether p may be shown at all: it may be read, or it is
// a directory on the way to something that may (a grant for /a/pub shows
// /a, listing only pub).
func (a access) visible(p string) bool {
	if a.readable(p) {
		return true
	}
	if !depotpath.Within(p, a.prefix) {
		return false
	}
	for _, g := range a.grants {
		if depotpath.Within(g.Prefix, p) && a.readable(g.Prefix) {
			return true
		}
	}
	return false
}
