package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// sessions is the streamable HTTP transport's session id manager (mcp-go's
// SessionIdManager): it knows the live sessions, so it can cap them, in
// all and per identity, and the dropped ones, which mcp-go then answers
// 404. It also keeps, for every live session and open notification
// stream, the request that authenticated it, so that a revoked credential
// loses them (recheck).
//
// mcp-go's Generate does not say who the session is for, so an
// initialize first reserves a place for its identity (reserve); the
// handler then gives the session it created to that identity (own), or
// gives the place back.
type sessions struct {
	max    int           // live sessions in all
	perKey int           // live and reserved sessions of one identity
	idle   time.Duration // dropped ids are remembered this long

	mu      sync.Mutex // guards everything below
	live    map[string]*session
	gone    map[string]time.Time // dropped id -> when
	streams map[*stream]struct{}
	held    map[string]int // identity key -> live sessions owned plus places reserved
	pending int            // places reserved and not yet owned or returned
}

type session struct {
	req *http.Request // the latest request, for rechecks
	key string        // the owning identity's key; "" until own
}

// stream is an open notification stream, or another request that lasts
// (a raw upload's PUT) and must end with its credential.
type stream struct {
	req     *http.Request
	session string
	kind    string // "" for a notification stream, "upload" for a PUT
	cancel  context.CancelFunc
}

func newSessions(max, perKey int, idle time.Duration) *sessions {
	return &sessions{max: max, perKey: perKey, idle: idle, live: map[string]*session{}, gone: map[string]time.Time{},
		streams: map[*stream]struct{}{}, held: map[string]int{}}
}

const sessionPrefix = "depotfs-session-"

// Generate returns a new session id.
func (m *sessions) Generate() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := sessionPrefix + hex.EncodeToString(b)
	m.mu.Lock()
	m.live[id] = &session{}
	m.mu.Unlock()
	return id
}

// errNoSession is Validate's answer for an id it never issued.
var errNoSession = errors.New("no such session")

// Validate reports whether id is a dropped session (mcp-go answers 404
// "Session terminated"), or errNoSession (also 404) if it is unknown.
func (m *sessions) Validate(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.live[id]; ok {
		return false, nil
	}
	if _, ok := m.gone[id]; ok {
		return true, nil
	}
	return false, errNoSession
}

// Terminate drops a session: a client's DELETE, or mcp-go's sweeper after
// SessionIdleTimeout.
func (m *sessions) Terminate(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(id)
	return false, nil
}

func (m *sessions) dropLocked(id string) {
	s, ok := m.live[id]
	if !ok {
		return
	}
	delete(m.live, id)
	if s.key != "" {
		m.releaseLocked(s.key)
	}
	now := time.Now()
	m.gone[id] = now
	if len(m.gone) > 4*m.max {
		for g, t := range m.gone {
			if now.Sub(t) > m.idle {
				delete(m.gone, g)
			}
		}
	}
}

// errSessionsFull and errIdentitySessionsFull are reserve's refusals.
var (
	errSessionsFull         = errors.New("the server's live sessions are at their limit")
	errIdentitySessionsFull = errors.New("this identity's live sessions are at their limit")
)

// reserve takes a place for a new session of the identity key, refusing
// when the server or the identity is at its limit. The place is the
// identity's until own gives it a session or unreserve returns it.
func (m *sessions) reserve(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.held[key] >= m.perKey:
		return errIdentitySessionsFull
	case len(m.live)+m.pending >= m.max:
		return errSessionsFull
	}
	m.held[key]++
	m.pending++
	return nil
}

// own gives the session id, created with a place reserve took for key, to
// key; an id that is no longer live (or "", none) returns the place.
func (m *sessions) own(id, key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending--
	if s, ok := m.live[id]; ok && s.key == "" {
		s.key = key
		return
	}
	m.releaseLocked(key)
}

// unreserve returns a place reserve took for key and no session got.
func (m *sessions) unreserve(key string) { m.own("", key) }

func (m *sessions) releaseLocked(key string) {
	if m.held[key]--; m.held[key] <= 0 {
		delete(m.held, key)
	}
}

// count returns the live sessions of the identity key (with places
// reserved for it) and its limit.
func (m *sessions) count(key string) (held, limit int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held[key], m.perKey
}

// seen notes the latest authenticated request of a session.
func (m *sessions) seen(id string, r *http.Request) {
	if id == "" {
		return
	}
	m.mu.Lock()
	if s, ok := m.live[id]; ok {
		s.req = r
	}
	m.mu.Unlock()
}

// open registers a notification stream until the returned func is called.
func (m *sessions) open(st *stream) func() {
	m.mu.Lock()
	m.streams[st] = struct{}{}
	m.mu.Unlock()
	return func() {
		m.mu.Lock()
		delete(m.streams, st)
		m.mu.Unlock()
	}
}

// LiveSessions returns how many HTTP sessions (protocol revisions with
// sessions) are open now: started and neither deleted nor dropped for
// idleness. It is safe for concurrent use; depotfs serve's metrics read
// it at each scrape.
func (s *Server) LiveSessions() int {
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

// recheckEvery is how often open streams and sessions are authenticated
// again.
const recheckEvery = time.Second

// recheck authenticates every live session and open stream again with the
// request that last authenticated it, until ctx ends. A credential that no
// longer passes (a revoked token, a certificate on a reloaded CRL) loses
// its streams and sessions at once; each loss is audited and logged.
func (s *Server) recheck(ctx context.Context, check func(*http.Request) error) {
	t := time.NewTicker(recheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		m := s.sessions
		m.mu.Lock()
		reqs := map[string]*http.Request{} // session id -> its latest request
		for id, ss := range m.live {
			if ss.req != nil {
				reqs[id] = ss.req
			}
		}
		streams := slices.Collect(maps.Keys(m.streams))
		m.mu.Unlock()

		failed := map[string]error{} // session id -> why
		for id, r := range reqs {
			if err := check(r); err != nil {
				failed[id] = err
			}
		}
		ended := map[string]int{} // session id -> its streams ended
		for _, st := range streams {
			err, ok := failed[st.session]
			if !ok || st.session == "" {
				err = check(st.req)
			}
			if err == nil {
				continue
			}
			st.cancel()
			if st.session == "" {
				s.auditRevoked(st.req, st.kind, "", 1, err)
				continue
			}
			failed[st.session] = err
			ended[st.session]++
		}
		m.mu.Lock()
		for id := range failed {
			m.dropLocked(id)
		}
		m.mu.Unlock()
		for id, err := range failed {
			s.auditRevoked(reqs[id], "", id, ended[id], err)
		}
	}
}

// auditRevoked records that a credential lost a session and its streams,
// or (kind "upload") a PUT in flight.
func (s *Server) auditRevoked(r *http.Request, kind, session string, streams int, err error) {
	if r == nil {
		return
	}
	who, _ := identity.FromContext(r.Context())
	reason := fmt.Sprintf("credential no longer valid (%v): ended %d notification stream(s)", err, streams)
	if kind == "upload" {
		reason = fmt.Sprintf("credential no longer valid (%v): cut a raw upload in flight; nothing of it is stored", err)
	}
	if session != "" {
		reason += " and session " + session
	}
	s.log.Warn("revoked credential: streams and session ended", "identity", who.String(), "session", session, "streams", streams, "err", err)
	s.auditEdge(&audit.Record{Event: audit.EventAuth, Stage: "revoked", Transport: "http", Remote: r.RemoteAddr,
		Session: session, Identity: who.String(), Auth: string(who.Method), Serial: who.Serial, TokenID: who.TokenID,
		Decision: audit.Deny, Reason: reason}, "a revocation")
}
