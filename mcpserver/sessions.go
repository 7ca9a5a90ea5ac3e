package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
	"github.com/depotfs/depotfs/internal/identity"
)

// sessions is the streamable HTTP transport's session id manager (mcp-go's
// SessionIdManager): it knows the live sessions, so it can cap them, and
// the dropped ones, which mcp-go then answers 404. It also keeps, for
// every live session and open notification stream, the request that
// authenticated it, so that a revoked credential loses them (recheck).
type sessions struct {
	max  int
	idle time.Duration // dropped ids are remembered this long

	mu      sync.Mutex
	live    map[string]*session
	gone    map[string]time.Time // dropped id -> when
	streams map[*stream]struct{}
}

type session struct {
	req *http.Request // the latest request, for rechecks
}

// stream is an open notification stream.
type stream struct {
	req     *http.Request
	session string
	cancel  context.CancelFunc
}

func newSessions(max int, idle time.Duration) *sessions {
	return &sessions{max: max, idle: idle, live: map[string]*session{}, gone: map[string]time.Time{}, streams: map[*stream]struct{}{}}
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
	if _, ok := m.live[id]; !ok {
		return
	}
	delete(m.live, id)
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

// full reports whether a new session would exceed the cap.
func (m *sessions) full() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.live) >= m.max
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

// recheckEvery is how often open streams and sessions are authenticated
// again.
const recheckEvery = time.Second

// recheck authenticates every live session and open stream again with the
// request that last authenticated it, until ctx ends. A credential that no
// longer passes (a revoked token, a certificate on a reloaded CRL) loses
// its streams and sessions at once; each loss is audited and logged.
func (s *Server) recheck(ctx context.Context, check func(*http.Request) error, end func(sessionIDs []string)) {
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
		var sess []string
		reqs := map[string]*http.Request{}
		for id, ss := range m.live {
			if ss.req != nil {
				sess = append(sess, id)
				reqs[id] = ss.req
			}
		}
		var streams []*stream
		for st := range m.streams {
			streams = append(streams, st)
		}
		m.mu.Unlock()

		failed := map[string]error{} // session id -> why
		for _, id := range sess {
			if err := check(reqs[id]); err != nil {
				failed[id] = err
			}
		}
		var ended []*stream
		for _, st := range streams {
			err, ok := failed[st.session]
			if !ok || st.session == "" {
				err = check(st.req)
			}
			if err != nil {
				st.cancel()
				ended = append(ended, st)
				if st.session != "" {
					failed[st.session] = err
				}
			}
		}
		if len(failed) == 0 && len(ended) == 0 {
			continue
		}
		var ids []string
		m.mu.Lock()
		for id := range failed {
			m.dropLocked(id)
			ids = append(ids, id)
		}
		m.mu.Unlock()
		end(ids)
		for id, err := range failed {
			n := 0
			for _, st := range ended {
				if st.session == id {
					n++
				}
			}
			s.auditRevoked(reqs[id], id, n, err)
		}
		for _, st := range ended {
			if st.session == "" {
				s.auditRevoked(st.req, "", 1, check(st.req))
			}
		}
	}
}

// auditRevoked records that a credential lost a session and its streams.
func (s *Server) auditRevoked(r *http.Request, session string, streams int, err error) {
	if r == nil {
		return
	}
	who, _ := identity.FromContext(r.Context())
	reason := fmt.Sprintf("credential no longer valid (%v): ended %d notification stream(s)", err, streams)
	if session != "" {
		reason += " and session " + session
	}
	s.log.Warn("revoked credential: streams and session ended", "identity", who.String(), "session", session, "streams", streams, "err", err)
	if s.opts.Audit == nil {
		return
	}
	rec := &audit.Record{Event: audit.EventAuth, Stage: "revoked", Transport: "http", Remote: r.RemoteAddr,
		Session: session, Identity: who.String(), Auth: string(who.Method), Serial: who.Serial, TokenID: who.TokenID,
		Decision: audit.Deny, Reason: reason}
	if aerr := s.opts.Audit.Append(rec); aerr != nil {
		s.log.Error("audit record of a revocation not written", "err", aerr)
	}
}
