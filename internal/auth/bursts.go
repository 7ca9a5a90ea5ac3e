package auth

import (
	"cmp"
	"context"
	"net"
	"sync"
	"time"
)

// DefaultBurstWindow is how long refused authentications from one address
// count as one burst.
const DefaultBurstWindow = 10 * time.Second

// maxBurstAddrs bounds the addresses a Bursts remembers at once; failures
// from further addresses share one burst.
const maxBurstAddrs = 4096

// otherAddrs is the burst of the addresses beyond maxBurstAddrs.
const otherAddrs = "other addresses"

// Bursts is an EventSink that passes on refused authentications grouped
// per address, stage and reason: the first of a burst at once, the others
// of the same window as one Failure whose Count says how many it stands
// for, when the window ends. The credential is not part of the key, so
// made-up tokens that differ at each request still make one burst. Refusals cost a client nothing to send, and each one the
// sink receives is an audit record and a log line (an fsync, a line of
// disk): a client sending bad tokens as fast as it can must not turn them
// into a disk's worth of records. It is safe for concurrent use; Close
// passes on what is still counted.
type Bursts struct {
	sink   EventSink
	window time.Duration

	mu     sync.Mutex
	open   map[string]*burst // by host, stage and reason
	closed bool
}

// burst is the refusals of one address in one window after its first.
type burst struct {
	count int
	last  Failure // the latest, reported with the count
	timer *time.Timer
}

// NewBursts returns sink behind a Bursts; window 0 means
// DefaultBurstWindow.
func NewBursts(sink EventSink, window time.Duration) *Bursts {
	if window <= 0 {
		window = DefaultBurstWindow
	}
	return &Bursts{sink: sink, window: window, open: map[string]*burst{}}
}

var _ EventSink = (*Bursts)(nil)

// AuthFailure passes f on at once if it is the first from its address in
// the window, and otherwise counts it into the report at the window's end.
func (b *Bursts) AuthFailure(ctx context.Context, f Failure) {
	host, _, err := net.SplitHostPort(f.Remote)
	if err != nil {
		host = f.Remote
	}
	key := host + " " + string(f.Stage) + " " + f.Reason
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		b.sink.AuthFailure(ctx, f)
		return
	}
	if _, ok := b.open[key]; !ok && len(b.open) >= maxBurstAddrs {
		key = otherAddrs
	}
	if bu, ok := b.open[key]; ok {
		bu.count++
		bu.last = f
		b.mu.Unlock()
		return
	}
	bu := &burst{}
	bu.timer = time.AfterFunc(b.window, func() { b.end(key, bu) })
	b.open[key] = bu
	b.mu.Unlock()
	f.Count = cmp.Or(f.Count, 1)
	b.sink.AuthFailure(ctx, f)
}

// end closes the window of key's burst bu and reports what it counted.
func (b *Bursts) end(key string, bu *burst) {
	b.mu.Lock()
	if b.open[key] != bu {
		b.mu.Unlock()
		return
	}
	delete(b.open, key)
	b.mu.Unlock()
	b.report(bu)
}

func (b *Bursts) report(bu *burst) {
	if bu.count == 0 {
		return
	}
	f := bu.last
	f.Count = bu.count
	b.sink.AuthFailure(context.Background(), f)
}

// Close reports every burst still counted and passes later failures on
// one by one. It is idempotent.
func (b *Bursts) Close() {
	b.mu.Lock()
	open := b.open
	b.open, b.closed = map[string]*burst{}, true
	b.mu.Unlock()
	for _, bu := range open {
		bu.timer.Stop()
		b.report(bu)
	}
}
