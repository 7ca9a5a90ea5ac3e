package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/tenant"
	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// sessions is the streamable HTTP transport's session id manager: every
// session mcp-go creates gets its id from Generate, so every session is
// counted there, whatever its initialize looked like on the wire. It caps
// the live sessions in all and per owner (sessionOwner), remembers the
// dropped ones (mcp-go answers their ids 404, and a client starts again),
// and keeps, for every live session and open stream, the credential that
// opened it, so that a revoked credential loses them (Server.recheck).
//
// A new session over a cap ends the least recently used idle session (no
// request in flight, no open stream) of its owner, or of the server for
// the global cap; only when every candidate is busy is it refused. An
// honest client that never ends its sessions is thus never refused, and a
// client opening sessions in a loop only churns its own.
//
// mcp-go calls Generate from inside its handler, where a refusal is
// impossible; so the handler first reserves a place for a request that
// will create a session (reserve, answering 503 when it cannot), and
// Generate, which receives the request through the resolver
// (ResolveSessionIdManager), fills that place. A session mcp-go creates
// without a reservation is still counted and the caps are still enforced
// by eviction: the reservation only lets a refusal be an HTTP answer.
//
// It is safe for concurrent use.
type sessions struct {
	max      int // live sessions in all
	perOwner int // live and reserved sessions of one owner
	// end frees mcp-go's state of sessions dropped here (eviction,
	// revocation); set once by the handler before any request.
	end func(ids []string)
	now func() time.Time

	mu        sync.Mutex // guards everything below
	live      map[string]*session
	owners    map[string]*owned
	pending   int                 // places reserved and not yet filled or returned
	gone      map[string]struct{} // dropped ids, the last max of them
	goneOrder []string            // gone's ids in the order dropped, a ring
	goneNext  int                 // goneOrder's oldest, once it is full
	streams   map[*stream]struct{}
}

// session is one live session.
type session struct {
	id    string
	owner string     // sessionOwner of the identity that opened it
	cred  credential // what opened it, checked again by recheck
	busy  int        // requests in flight, open streams included
	used  time.Time  // when the last request began or ended
}

// owned is what one owner holds.
type owned struct {
	live     map[string]*session
	reserved int
}

func (o *owned) held() int { return len(o.live) + o.reserved }

// credential is what authenticated a request, kept for rechecks: a
// request carrying only the Authorization header, the TLS state and the
// identity, never the body.
type credential struct {
	who identity.Identity
	req *http.Request
}

// credentialOf returns the credential of r, which the caller may keep
// long after r is done without keeping r's body.
func credentialOf(r *http.Request) credential {
	who, _ := identity.FromContext(r.Context())
	c := &http.Request{Header: http.Header{}, TLS: r.TLS, RemoteAddr: r.RemoteAddr}
	if v, ok := r.Header["Authorization"]; ok {
		c.Header["Authorization"] = slices.Clone(v)
	}
	return credential{who: who, req: c.WithContext(identity.NewContext(context.Background(), who))}
}

// key says which credentials are the same for a recheck: one check
// answers for every session and stream it opened.
func (c credential) key() string {
	return tool.Key(c.who) + "\x00" + c.req.Header.Get("Authorization")
}

// sessionOwner is the key every per-identity session cap is kept under:
// the identity's tenant (internal/tenant), so several tokens with one
// grant share one budget and every caller without a credential is the one
// tenant "local". It is the one place that says whose budget a session is
// charged to; the caps, the eviction and Server.quotas follow it.
func sessionOwner(who identity.Identity) string { return tenant.Of(who) }

// stream is an open notification stream, or another request that lasts
// (a raw upload's PUT) and must end with its credential.
type stream struct {
	cred    credential
	session string
	kind    string // "" for a notification stream, "upload" for a PUT
	cancel  context.CancelFunc
}

func newSessions(max, perOwner int) *sessions {
	return &sessions{max: max, perOwner: perOwner, end: func([]string) {}, now: time.Now,
		live: map[string]*session{}, owners: map[string]*owned{}, gone: map[string]struct{}{}, streams: map[*stream]struct{}{}}
}

const sessionPrefix = "depotfs-session-"

// ticketKey is the request context key of a reservation.
type ticketKey struct{}

// ticket is a place reserve took for a request that will create a
// session; Generate fills it with the session's id.
type ticket struct {
	owner string
	id    string // "" until Generate
}

// ResolveSessionIdManager returns the manager mcp-go uses for r: one that
// knows r, so that Generate can charge the session to r's owner and fill
// r's reservation. r is nil for mcp-go's sweeper.
func (m *sessions) ResolveSessionIdManager(r *http.Request) server.SessionIdManager {
	if r == nil {
		return m
	}
	return requestSessions{m, r}
}

// requestSessions is the session id manager of one request.
type requestSessions struct {
	*sessions
	r *http.Request
}

// Generate returns the id of a new session opened by the request.
func (rs requestSessions) Generate() string { return rs.generate(rs.r) }

// Generate returns the id of a new session of no known request: mcp-go
// does not call it (its sweeper only terminates), but a session made
// here is counted like any other, under the owner "".
func (m *sessions) Generate() string { return m.generate(nil) }

func (m *sessions) generate(r *http.Request) string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := sessionPrefix + hex.EncodeToString(b)
	s := &session{id: id, used: m.now()}
	var t *ticket
	if r != nil {
		s.cred = credentialOf(r)
		s.owner = sessionOwner(s.cred.who)
		t, _ = r.Context().Value(ticketKey{}).(*ticket)
	}
	m.mu.Lock()
	var evicted []string
	if t != nil && t.id == "" && t.owner == s.owner {
		// The place reserved: the request in flight is the session's.
		t.id = id
		m.ownedLocked(s.owner).reserved--
		m.pending--
		s.busy = 1
	} else {
		// Not reserved (mcp-go created a session the handler did not
		// foresee): counted all the same, and the caps kept by eviction.
		evicted, _ = m.victimsLocked(s.owner, 1, 1)
		for _, v := range evicted {
			m.dropLocked(v)
		}
	}
	o := m.ownedLocked(s.owner)
	o.live[id] = s
	m.live[id] = s
	m.mu.Unlock()
	m.end(evicted)
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
// SessionIdleTimeout. mcp-go frees its own state of the session then.
func (m *sessions) Terminate(id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dropLocked(id)
	return false, nil
}

func (m *sessions) ownedLocked(owner string) *owned {
	o := m.owners[owner]
	if o == nil {
		o = &owned{live: map[string]*session{}}
		m.owners[owner] = o
	}
	return o
}

func (m *sessions) dropLocked(id string) {
	s, ok := m.live[id]
	if !ok {
		return
	}
	delete(m.live, id)
	if o := m.owners[s.owner]; o != nil {
		delete(o.live, id)
		if o.held() == 0 {
			delete(m.owners, s.owner)
		}
	}
	// Remembered only to answer "terminated" rather than "unknown" (both
	// 404): the last max dropped, so that churning sessions cannot grow
	// it.
	if len(m.goneOrder) < m.max {
		m.goneOrder = append(m.goneOrder, id)
	} else {
		delete(m.gone, m.goneOrder[m.goneNext])
		m.goneOrder[m.goneNext] = id
		m.goneNext = (m.goneNext + 1) % m.max
	}
	m.gone[id] = struct{}{}
}

// victimsLocked chooses the idle sessions to end so that owner has room
// for n more and the server for total more: the owner's least recently
// used first, then the server's. It returns false when there are not
// enough idle sessions (every candidate busy), and chooses nothing then.
func (m *sessions) victimsLocked(owner string, n, total int) ([]string, bool) {
	chosen := map[string]bool{}
	var out []string
	pick := func(from map[string]*session, need int) bool {
		if need <= 0 {
			return true
		}
		idle := make([]*session, 0, len(from))
		for _, s := range from {
			if s.busy == 0 && !chosen[s.id] {
				idle = append(idle, s)
			}
		}
		if len(idle) < need {
			return false
		}
		slices.SortFunc(idle, func(a, b *session) int { return a.used.Compare(b.used) })
		for _, s := range idle[:need] {
			chosen[s.id] = true
			out = append(out, s.id)
		}
		return true
	}
	var mine map[string]*session
	held := 0
	if o := m.owners[owner]; o != nil {
		mine, held = o.live, o.held()
	}
	if !pick(mine, held+n-m.perOwner) || !pick(m.live, len(m.live)+m.pending+total-len(out)-m.max) {
		return nil, false
	}
	return out, true
}

// errSessionsFull and errIdentitySessionsFull are reserve's refusals.
var (
	errSessionsFull         = errors.New("the server's live sessions are at their limit and all of them are busy")
	errIdentitySessionsFull = errors.New("this tenant's live sessions are at their limit and all of them are busy")
)

// reserve takes a place for a new session of owner, ending idle sessions
// (owner's, then the server's, least recently used first) to make room;
// it refuses only when the sessions in the way are all busy. The place is
// the owner's until Generate fills it or settle returns it.
func (m *sessions) reserve(owner string) (*ticket, error) {
	m.mu.Lock()
	victims, ok := m.victimsLocked(owner, 1, 1)
	if !ok {
		full := m.owners[owner] != nil && m.owners[owner].held() >= m.perOwner
		m.mu.Unlock()
		if full {
			return nil, errIdentitySessionsFull
		}
		return nil, errSessionsFull
	}
	for _, v := range victims {
		m.dropLocked(v)
	}
	m.ownedLocked(owner).reserved++
	m.pending++
	m.mu.Unlock()
	m.end(victims)
	return &ticket{owner: owner}, nil
}

// settle ends the request that held t, whose answer gave the client the
// session id answered: the session it created is idle from now on, or
// the place, unfilled, is returned. A session whose id the client was
// never given (mcp-go makes one for an initialize sent as a
// notification, and answers 202 without it) is ended at once: nobody
// could use it, and it would hold a place until evicted.
func (m *sessions) settle(t *ticket, answered string) {
	m.mu.Lock()
	if t.id == "" {
		m.pending--
		if o := m.owners[t.owner]; o != nil {
			if o.reserved--; o.held() == 0 {
				delete(m.owners, t.owner)
			}
		}
		m.mu.Unlock()
		return
	}
	s, ok := m.live[t.id]
	if !ok {
		m.mu.Unlock()
		return
	}
	s.busy--
	s.used = m.now()
	if answered == t.id {
		m.mu.Unlock()
		return
	}
	m.dropLocked(t.id)
	m.mu.Unlock()
	m.end([]string{t.id})
}

// enter notes a request in flight on session id (a stream until it
// ends); the returned func notes its end. An unknown id is left to mcp-go
// (404).
func (m *sessions) enter(id string) func() {
	if id == "" {
		return func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.live[id]
	if !ok {
		return func() {}
	}
	s.busy++
	s.used = m.now()
	return func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		s.busy--
		s.used = m.now()
	}
}

// count returns the live sessions of owner (with places reserved for it)
// and its limit.
func (m *sessions) count(owner string) (held, limit int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o := m.owners[owner]; o != nil {
		held = o.held()
	}
	return held, m.perOwner
}

// open registers a stream until the returned func is called.
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
// sessions) are open now: started and neither deleted nor dropped. It is
// safe for concurrent use; depotfs serve's metrics read it at each
// scrape.
func (s *Server) LiveSessions() int {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	return len(s.sessions.live)
}

// quotas returns the per-tenant limits the transport keeps and what the
// tenant key holds of each (tool.Env.Quotas); key is a sessionOwner.
func (s *Server) quotas(key string) []tool.Quota {
	held, limit := s.sessions.count(key)
	return []tool.Quota{{Name: "sessions", Flag: "--max-sessions-per-identity", Held: int64(held), Limit: int64(limit)}}
}

// endSessions frees mcp-go's state of sessions dropped here, as a
// client's DELETE would: mcp-go keeps a session's notification queue and
// registrations until then, and would keep an evicted session's until its
// idle sweep.
func (s *Server) endSessions(ids []string) {
	for _, id := range ids {
		r, _ := http.NewRequestWithContext(context.WithoutCancel(s.done), http.MethodDelete, "/", nil)
		r.Header.Set("Mcp-Session-Id", id)
		s.streamable.ServeHTTP(discardResponse{}, r)
	}
}

// discardResponse is the ResponseWriter of endSessions' DELETEs, whose
// answers nobody reads.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}

// recheckEvery is how often open streams and sessions are authenticated
// again: one check per credential, however many sessions it holds, so a
// revocation ends them well within 2 s.
const recheckEvery = 500 * time.Millisecond

// recheck authenticates every live session and open stream again with the
// credential that opened it, until ctx ends; one check answers for every
// session and stream of one credential. A credential that no longer
// passes (a revoked token, a certificate on a reloaded CRL) loses its
// streams and sessions at once; each loss is audited and logged.
func (s *Server) recheck(ctx context.Context, check func(*http.Request) error) {
	t := time.NewTicker(recheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.recheckOnce(check)
	}
}

func (s *Server) recheckOnce(check func(*http.Request) error) {
	m := s.sessions
	m.mu.Lock()
	creds := map[string]credential{} // credential key -> one of them
	sessionsOf := map[string][]string{}
	for id, ss := range m.live {
		if ss.cred.req == nil {
			continue
		}
		k := ss.cred.key()
		creds[k] = ss.cred
		sessionsOf[k] = append(sessionsOf[k], id)
	}
	streams := make([]*stream, 0, len(m.streams))
	for st := range m.streams {
		streams = append(streams, st)
		creds[st.cred.key()] = st.cred
	}
	m.mu.Unlock()

	failed := map[string]error{} // credential key -> why
	for k, c := range creds {
		if err := check(c.req); err != nil {
			failed[k] = err
		}
	}
	if len(failed) == 0 {
		return
	}
	ended := map[string]int{} // session id -> its streams ended
	for _, st := range streams {
		err, ok := failed[st.cred.key()]
		if !ok {
			continue
		}
		st.cancel()
		if st.session == "" {
			s.auditRevoked(st.cred, st.kind, "", 1, err)
			continue
		}
		ended[st.session]++
	}
	var dropped []string
	m.mu.Lock()
	for k := range failed {
		for _, id := range sessionsOf[k] {
			if _, ok := m.live[id]; ok {
				m.dropLocked(id)
				dropped = append(dropped, id)
			}
		}
	}
	m.mu.Unlock()
	s.sessions.end(dropped)
	for k, err := range failed {
		for _, id := range sessionsOf[k] {
			s.auditRevoked(creds[k], "", id, ended[id], err)
		}
	}
}

// auditRevoked records that a credential lost a session and its streams,
// or (kind "upload") a PUT in flight.
func (s *Server) auditRevoked(c credential, kind, session string, streams int, err error) {
	who := c.who
	reason := fmt.Sprintf("credential no longer valid (%v): ended %d notification stream(s)", err, streams)
	if kind == "upload" {
		reason = fmt.Sprintf("credential no longer valid (%v): cut a raw upload in flight; nothing of it is stored", err)
	}
	if session != "" {
		reason += " and session " + session
	}
	s.log.Warn("revoked credential: streams and session ended", "identity", who.String(), "session", session, "streams", streams, "err", err)
	s.auditEdge(&audit.Record{Event: audit.EventAuth, Stage: "revoked", Transport: "http", Remote: c.req.RemoteAddr,
		Session: session, Identity: who.String(), Auth: string(who.Method), Serial: who.Serial, TokenID: who.TokenID,
		Decision: audit.Deny, Reason: reason}, "a revocation")
}
