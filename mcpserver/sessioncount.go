package mcpserver

import "github.com/depotfs/depotfs/mcpserver/internal/tool"

// LiveSessions returns how many HTTP sessions (protocol revisions with
// sessions) are open now: started and neither deleted nor dropped for
// idleness. It is 0 before Handler's transport exists. It is safe for
// concurrent use; depotfs serve's metrics read it at each scrape.
func (s *Server) LiveSessions() int {
	if s.sessions == nil {
		return 0
	}
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return len(s.sessions.live)
}

// quotas returns the per-identity limits the transport keeps and what the
// identity of key holds of each (tool.Env.Quotas).
func (s *Server) quotas(key string) []tool.Quota {
	held, limit := s.sessions.count(key)
	return []tool.Quota{{Name: "sessions", Flag: "--max-sessions-per-identity", Held: int64(held), Limit: int64(limit)}}
}
