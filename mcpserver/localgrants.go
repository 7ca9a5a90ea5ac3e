package mcpserver

import (
	"slices"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// SetLocalGrants replaces Options.LocalGrants (nil: full grants) for HTTP
// requests that arrive afterwards; depotfs serve calls it on SIGHUP. A
// stdio session keeps the grants it started with. It is safe for
// concurrent use.
func (s *Server) SetLocalGrants(grants []grant.Grant) {
	if grants == nil {
		s.localGrants.Store(nil)
		return
	}
	c := slices.Clone(grants)
	s.localGrants.Store(&c)
}

// local applies the local grants to an identity not backed by a
// credential.
func (s *Server) local(id identity.Identity) identity.Identity {
	if g := s.localGrants.Load(); g != nil {
		id.Full, id.Grants = false, slices.Clone(*g)
	}
	return id
}
