// Package ratelimit keeps per-identity token buckets (golang.org/x/time/rate)
// for calls per second and content bytes per second, and notices an unusual
// pattern: a burst of denials from one identity.
//
// Every method takes the current time explicitly, so tests drive the
// buckets with a clock of their own instead of sleeping. A Limiter is safe
// for concurrent use. It keeps one small entry per key it has seen, at most
// Limits.MaxKeys: beyond that the least recently used entry is dropped, so
// a flood of distinct keys (failed authentications from many addresses)
// cannot exhaust memory.
package ratelimit

import (
	"math"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Limits configure a Limiter. A rate of zero or less means unlimited.
type Limits struct {
	// Calls is the sustained number of tool calls per second per identity,
	// CallBurst how many may arrive at once (at least 1).
	Calls     float64
	CallBurst int
	// Bytes is the sustained number of content bytes per second per
	// identity, ByteBurst how many may arrive at once. A request larger
	// than ByteBurst (a stream, an archive) passes when the identity's
	// bucket is full and leaves it in debt by the excess: the identity's
	// next bytes wait until the debt is repaid, so over time it still gets
	// Bytes per second.
	Bytes     float64
	ByteBurst int
	// DenialBurst denials within DenialWindow from one identity are an
	// unusual pattern (Denial reports it); zero values mean 10 within 10 s.
	DenialBurst  int
	DenialWindow time.Duration
	// WarnEvery is how often at most one identity's unusual pattern is
	// reported; zero means a minute.
	WarnEvery time.Duration
	// MaxKeys bounds the identities tracked; zero means DefaultMaxKeys.
	MaxKeys int
}

// DefaultMaxKeys is the default of Limits.MaxKeys.
const DefaultMaxKeys = 10000

// Limiter holds the buckets of every identity.
type Limiter struct {
	limits Limits
	mu     sync.Mutex                       // guards ids and every buckets.lastWarn
	ids    *simplelru.LRU[string, *buckets] // at most MaxKeys, least recently used dropped
}

type buckets struct {
	calls, denials *rate.Limiter
	bytes          *debtBucket
	lastWarn       time.Time
}

// New returns a Limiter with the given limits.
func New(l Limits) *Limiter {
	l.CallBurst, l.ByteBurst = max(l.CallBurst, 1), max(l.ByteBurst, 1)
	if l.DenialBurst < 1 {
		l.DenialBurst = 10
	}
	if l.DenialWindow <= 0 {
		l.DenialWindow = 10 * time.Second
	}
	if l.WarnEvery <= 0 {
		l.WarnEvery = time.Minute
	}
	if l.MaxKeys <= 0 {
		l.MaxKeys = DefaultMaxKeys
	}
	ids, _ := simplelru.NewLRU[string, *buckets](l.MaxKeys, nil) // fails only for a size below 1
	return &Limiter{limits: l, ids: ids}
}

// Limits returns the limits in force, with defaults applied.
func (l *Limiter) Limits() Limits { return l.limits }

func limit(perSecond float64) rate.Limit {
	if perSecond <= 0 {
		return rate.Inf
	}
	return rate.Limit(perSecond)
}

// of returns the buckets of id, creating full ones on first sight (and
// dropping the least recently used entry when there are MaxKeys).
func (l *Limiter) of(id string) *buckets {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.ids.Get(id); ok {
		return b
	}
	window := l.limits.DenialWindow.Seconds()
	b := &buckets{
		calls:   rate.NewLimiter(limit(l.limits.Calls), l.limits.CallBurst),
		bytes:   &debtBucket{rate: l.limits.Bytes, burst: float64(l.limits.ByteBurst)},
		denials: rate.NewLimiter(rate.Limit(float64(l.limits.DenialBurst)/window), l.limits.DenialBurst),
	}
	l.ids.Add(id, b)
	return b
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ids.Len()
}

// Call takes one call token of id at now. When none is left it takes
// nothing and returns false and how long until one will be.
func (l *Limiter) Call(id string, now time.Time) (bool, time.Duration) {
	return take(l.of(id).calls, now, 1)
}

// Bytes takes n byte tokens of id at now. When there are not enough it
// takes nothing and returns false and how long until there will be. n
// larger than ByteBurst needs a full bucket and leaves it in debt (see
// Limits.Bytes).
func (l *Limiter) Bytes(id string, now time.Time, n int) (bool, time.Duration) {
	if n <= 0 {
		return true, 0
	}
	return l.of(id).bytes.take(now, n)
}

func take(lim *rate.Limiter, now time.Time, n int) (bool, time.Duration) {
	if lim.AllowN(now, n) {
		return true, 0
	}
	// AllowN took nothing; the wait is the time the missing tokens take to
	// accrue, a hint (other calls of the same identity may take them first).
	missing := float64(n) - lim.TokensAt(now)
	return false, time.Duration(math.Ceil(missing / float64(lim.Limit()) * float64(time.Second)))
}

// Denial records that a call of id was denied at now. It returns true when
// the denials of id exceed DenialBurst within DenialWindow, at most once per
// WarnEvery per identity: the caller should log a warning.
func (l *Limiter) Denial(id string, now time.Time) bool {
	b := l.of(id)
	if b.denials.AllowN(now, 1) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !b.lastWarn.IsZero() && now.Sub(b.lastWarn) < l.limits.WarnEvery {
		return false
	}
	b.lastWarn = now
	return true
}

// RetryAfter rounds a wait up to whole seconds, at least 1, for a
// retry-after hint; the longest wait a Limiter reports gives
// math.MaxInt32.
func RetryAfter(d time.Duration) int {
	if d >= time.Duration(math.MaxInt64) {
		return math.MaxInt32
	}
	return max(int(math.Ceil(d.Seconds())), 1)
}

// debtBucket is a token bucket whose tokens may go below zero: a request
// larger than the burst passes when the bucket is full and leaves the
// excess as debt. golang.org/x/time/rate refuses such a request for ever,
// and a stream or archive of one call has no size bound of its own: a
// push of a 143 MiB directory was refused "retry after 2147483647 s"
// although every file of it alone passed. Splitting such a request into
// pieces charged as they arrive would hold its connection open while it
// waits; debt charges it at once and delays the identity's next bytes
// instead, so the rate holds over time. It is safe for concurrent use.
type debtBucket struct {
	rate  float64 // tokens a second; 0 or less: unlimited
	burst float64

	mu     sync.Mutex
	tokens float64   // negative: debt
	last   time.Time // of the last refill; zero: full
}

// maxWait bounds a reported wait, which a small rate and a large debt
// could otherwise push past what a time.Duration holds.
const maxWait = time.Duration(math.MaxInt64)

// take takes n tokens at now if the bucket holds them, or is full when n
// is more than the burst. Otherwise it takes nothing and returns how long
// until it will.
func (b *debtBucket) take(now time.Time, n int) (bool, time.Duration) {
	if b.rate <= 0 {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.last.IsZero():
		b.tokens = b.burst
	case now.After(b.last):
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	need := min(float64(n), b.burst)
	if b.tokens >= need {
		b.tokens -= float64(n)
		return true, 0
	}
	secs := math.Ceil((need-b.tokens)/b.rate*1e9) / 1e9
	if secs >= maxWait.Seconds() {
		return false, maxWait
	}
	return false, time.Duration(secs * float64(time.Second))
}
