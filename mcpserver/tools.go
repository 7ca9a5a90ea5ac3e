package mcpserver

import (
	"context"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/mcpserver/internal/fstools"
	"github.com/depotfs/depotfs/mcpserver/internal/guide"
	"github.com/depotfs/depotfs/mcpserver/internal/pending"
	"github.com/depotfs/depotfs/mcpserver/internal/provider"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// toolList returns every tool the server offers, profile by profile: the
// one list of what the server offers. Each profile's package builds its
// tools (see package tool for how a tool is declared).
func (s *Server) toolList(p *pending.List) []tool.Tool {
	list := guide.Tools(s.env, p, s.uploads)
	if s.serves(ProfileProvider) {
		list = append(list, provider.Tools(s.env)...)
	}
	if s.serves(ProfileFS) {
		list = append(list, fstools.Tools(s.env)...)
	}
	return list
}

var _ auth.EventSink = (*Server)(nil)

// AuthFailure records a refused TLS handshake or authentication in the
// audit log and in the counts of the peer's address, and warns about a
// burst of them (depotfs serve also logs each failure, see its logSink).
// It implements auth.EventSink: it is safe for concurrent use and returns
// once the record is durable; the refusal stands whatever happens here.
func (s *Server) AuthFailure(_ context.Context, f auth.Failure) {
	reason := f.Reason
	if f.Err != nil {
		reason += ": " + f.Err.Error()
	}
	r := &audit.Record{
		Time: f.Time, Event: audit.EventAuth, Transport: "http", Remote: f.Remote, Auth: string(f.Method),
		Serial: f.Serial, TokenID: f.TokenID, Stage: string(f.Stage), Resumed: f.Resumed, Reason: reason,
	}
	if f.Subject != "" {
		r.Identity = "http:" + f.Subject
	}
	s.rt.AuthRefused(r, f.Count, f.Reason)
}

// IdentityStats returns the counts of every identity that called since the
// server started (at most the 10,000 seen most recently), sorted by
// identity. It is safe to call concurrently with calls in flight; each
// entry is a consistent snapshot of one identity. depotfs reports them in
// each reply's stats.caller (the caller's own) and a statistics tool may
// include them all.
func (s *Server) IdentityStats() []IdentityStats { return s.rt.IdentityStats() }
