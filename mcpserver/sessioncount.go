package mcpserver

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
