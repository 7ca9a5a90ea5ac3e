package tenant

import (
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// The tenants that no credential names.
const (
	// Operator is the tenant of every credential that grants everything
	// (every tool, every path, read and write).
	Operator = "operator"
	// Local is the tenant of every caller without a credential.
	Local = "local"
)

// Of returns the tenant of id (see the package documentation).
func Of(id identity.Identity) string {
	switch {
	case id.Tenant != "":
		return "tenant:" + id.Tenant
	case !id.Authenticated():
		return Local
	case Full(id):
		return Operator
	}
	prefixes := make([]string, 0, len(id.Grants))
	for _, g := range id.Grants {
		prefixes = append(prefixes, g.Prefix)
	}
	slices.Sort(prefixes)
	return "grants:" + strings.Join(slices.Compact(prefixes), ",")
}

// Full reports whether id's credential grants everything: full grants, or
// a grant of every tool on the root, read and write.
func Full(id identity.Identity) bool {
	return id.Full || slices.ContainsFunc(id.Grants, func(g grant.Grant) bool {
		return g.Tool == grant.AnyTool && g.Prefix == depotpath.Root && g.Access == grant.ReadWrite
	})
}
