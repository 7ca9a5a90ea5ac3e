package tool

import (
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/ratelimit"
)

// IdentityStats counts what one identity did since the server started. It
// is a value; Server.IdentityStats returns copies.
type IdentityStats struct {
	// Identity is the key the counts and rate limits are kept under:
	// "<transport>:<subject>", or for an unauthenticated HTTP client its
	// address without the port ("http:127.0.0.1").
	Identity string `json:"identity"`
	// Calls counts tool calls received, refused ones included.
	Calls int64 `json:"calls"`
	// Denied counts calls refused by grants or the server's policy.
	Denied int64 `json:"denied"`
	// RateLimited counts calls refused by a rate limit.
	RateLimited int64 `json:"rate_limited"`
	// Failed counts other failed calls (validation, conflict, system...).
	Failed int64 `json:"failed"`
	// Bytes counts content bytes of calls that stored something.
	Bytes int64 `json:"bytes"`
	// AuthFailures counts refused authentications from this address.
	AuthFailures int64 `json:"auth_failures,omitempty"`
	// Last is the time of the last call or refused authentication.
	Last time.Time `json:"last"`
}

// maxStatsKeys bounds the identities (and addresses of refused
// authentications) whose counts are kept; beyond it the one seen least
// recently is dropped, so a flood from many addresses cannot exhaust
// memory (or, with an O(1) LRU, CPU).
const maxStatsKeys = ratelimit.DefaultMaxKeys

// identityStats holds the counts of every identity seen, in the order they
// were last updated. The zero value is ready.
type identityStats struct {
	mu  sync.Mutex
	ids *simplelru.LRU[string, *IdentityStats] // guarded by mu; nil until the first update
}

// update applies fn to key's counts under the lock and returns a copy.
func (st *identityStats) update(key string, fn func(*IdentityStats)) IdentityStats {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ids == nil {
		st.ids, _ = simplelru.NewLRU[string, *IdentityStats](maxStatsKeys, nil) // fails only for a size below 1
	}
	s, ok := st.ids.Get(key)
	if !ok {
		s = &IdentityStats{Identity: key}
		st.ids.Add(key, s)
	}
	fn(s)
	return *s
}

// all returns a copy of every identity's counts.
func (st *identityStats) all() []IdentityStats {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ids == nil {
		return []IdentityStats{}
	}
	out := make([]IdentityStats, 0, st.ids.Len())
	for _, v := range st.ids.Values() {
		out = append(out, *v)
	}
	return out
}

// IdentityStats returns the counts of every identity that called since the
// server started (at most the 10,000 seen most recently), sorted by
// identity. It is safe to call concurrently with
// calls in flight; each entry is a consistent snapshot of one identity.
// depotfs reports them in each reply's stats.caller (the caller's own) and
// a statistics tool may include them all.
func (s *Runtime) IdentityStats() []IdentityStats {
	out := s.stats.all()
	slices.SortFunc(out, func(a, b IdentityStats) int { return strings.Compare(a.Identity, b.Identity) })
	return out
}

// Key is the key an identity's counts and upload ids are kept under (its
// limits are its tenant's, see internal/tenant): its String, or for an unauthenticated HTTP
// client its transport and host (its port changes with every connection,
// so reconnecting does not reset its limits).
func Key(id identity.Identity) string {
	if id.Method == identity.MethodNone && id.Remote != "" {
		return id.Transport + ":" + HostOf(id.Remote)
	}
	return id.String()
}

// HostOf returns the host part of a host:port address, or addr itself.
func HostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
