package ratelimit_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/ratelimit"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestCallN1 is Proof 4: with a burst of N, N calls at one instant pass
// and call N+1 at the same instant is refused with a retry hint; the
// bucket refills at the configured rate on the explicit clock.
func TestCallN1(t *testing.T) {
	tests := []struct {
		name      string
		perSecond float64
		burst     int
		wantRetry time.Duration
	}{
		{"10 per second, burst 5", 10, 5, 100 * time.Millisecond},
		{"1 per second, burst 1", 1, 1, time.Second},
		{"0.5 per second, burst 3", 0.5, 3, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := ratelimit.New(ratelimit.Limits{Calls: tt.perSecond, CallBurst: tt.burst})
			for i := range tt.burst {
				if ok, _ := l.Call("alice", t0); !ok {
					t.Fatalf("call %d of a burst of %d refused", i+1, tt.burst)
				}
			}
			ok, wait := l.Call("alice", t0)
			if ok || wait != tt.wantRetry {
				t.Fatalf("call N+1 = %v, wait %v; want refused, wait %v", ok, wait, tt.wantRetry)
			}
			if ok, _ := l.Call("bob", t0); !ok {
				t.Errorf("another identity was limited by alice's calls")
			}
			// The refused call took nothing: one interval later exactly one
			// more call passes.
			if ok, _ := l.Call("alice", t0.Add(tt.wantRetry-time.Millisecond)); ok {
				t.Errorf("a call passed before the retry hint")
			}
			if ok, _ := l.Call("alice", t0.Add(tt.wantRetry)); !ok {
				t.Errorf("a call at the retry hint was refused")
			}
			if ok, _ := l.Call("alice", t0.Add(tt.wantRetry)); ok {
				t.Errorf("two calls passed after one interval")
			}
		})
	}
}

func TestBytes(t *testing.T) {
	l := ratelimit.New(ratelimit.Limits{Bytes: 1000, ByteBurst: 4000})
	if ok, _ := l.Bytes("a", t0, 3000); !ok {
		t.Fatal("3000 of a 4000 burst refused")
	}
	ok, wait := l.Bytes("a", t0, 2000)
	if ok || wait != time.Second {
		t.Fatalf("2000 more = %v, wait %v; want refused, 1s", ok, wait)
	}
	if ok, _ := l.Bytes("a", t0, 1000); !ok {
		t.Errorf("the refused request took tokens: 1000 of the remaining 1000 refused")
	}
	if ok, wait := l.Bytes("a", t0, 5000); ok || wait != 4*time.Second {
		t.Errorf("more than the burst from an empty bucket = %v, %v; want refused until it is full, 4s", ok, wait)
	}
	if ok, _ := l.Bytes("a", t0, 0); !ok {
		t.Errorf("zero bytes refused")
	}
}

// TestBytesDebt: a request larger than the burst passes from a full
// bucket and leaves the excess as debt, which the next request waits
// for; over the whole run the rate holds.
func TestBytesDebt(t *testing.T) {
	l := ratelimit.New(ratelimit.Limits{Bytes: 1 << 20, ByteBurst: 16 << 20})
	if ok, _ := l.Bytes("a", t0, 143<<20); !ok {
		t.Fatal("143 MiB refused from a full 16 MiB bucket")
	}
	ok, wait := l.Bytes("a", t0.Add(time.Second), 1<<20)
	if want := 127 * time.Second; ok || wait != want {
		t.Fatalf("1 MiB a second after 143 MiB = %v, wait %v; want refused, %v (the debt of 127 MiB, less the 1 MiB repaid, and 1 MiB)", ok, wait, want)
	}
	if ok, _ := l.Bytes("a", t0.Add(128*time.Second), 1<<20); !ok {
		t.Error("1 MiB refused once the debt is repaid")
	}
	// From an empty bucket a request over the burst waits for a full one.
	l2 := ratelimit.New(ratelimit.Limits{Bytes: 1000, ByteBurst: 1000})
	l2.Bytes("b", t0, 1000)
	if ok, wait := l2.Bytes("b", t0, 5000); ok || wait != time.Second {
		t.Errorf("5000 from an empty 1000 bucket = %v, %v; want refused, 1s", ok, wait)
	}
	if ok, _ := l2.Bytes("b", t0.Add(time.Second), 5000); !ok {
		t.Error("5000 refused from a full bucket")
	}
	// A tiny rate and a huge debt: the wait is capped, not overflowed.
	l3 := ratelimit.New(ratelimit.Limits{Bytes: 1e-6, ByteBurst: 1})
	l3.Bytes("c", t0, math.MaxInt)
	if ok, wait := l3.Bytes("c", t0, 1); ok || wait <= 0 || ratelimit.RetryAfter(wait) != math.MaxInt32 {
		t.Errorf("after a huge debt = %v, %v; want refused with the longest wait", ok, wait)
	}
}

func TestUnlimited(t *testing.T) {
	l := ratelimit.New(ratelimit.Limits{})
	for i := range 10000 {
		if ok, _ := l.Call("a", t0); !ok {
			t.Fatalf("call %d refused without a limit", i)
		}
	}
	if ok, _ := l.Bytes("a", t0, 1<<30); !ok {
		t.Fatalf("bytes refused without a limit")
	}
}

// TestDenialBurst checks that a burst of denials is reported once per
// WarnEvery, and that a slow trickle never is.
func TestDenialBurst(t *testing.T) {
	l := ratelimit.New(ratelimit.Limits{DenialBurst: 3, DenialWindow: 3 * time.Second, WarnEvery: time.Minute})
	now := t0
	for i := range 100 {
		if l.Denial("slow", now) {
			t.Fatalf("denial %d, one per second, reported as a burst", i)
		}
		now = now.Add(time.Second)
	}
	var warned []int
	for i := range 10 {
		if l.Denial("fast", t0) {
			warned = append(warned, i)
		}
	}
	if len(warned) != 1 || warned[0] != 3 {
		t.Errorf("warnings at denials %v, want only at the 4th (index 3)", warned)
	}
	later, again := t0.Add(time.Minute), false
	for range 4 {
		again = l.Denial("fast", later) || again
	}
	if !again {
		t.Errorf("a new burst a minute later was not reported again")
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want int
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {1500 * time.Millisecond, 2}, {time.Duration(math.MaxInt64), math.MaxInt32}} {
		if got := ratelimit.RetryAfter(tt.d); got != tt.want {
			t.Errorf("RetryAfter(%v) = %d, want %d", tt.d, got, tt.want)
		}
	}
}

// TestMaxKeys: a flood of distinct keys keeps at most MaxKeys entries,
// dropping the least recently used, so an active identity keeps its
// buckets.
func TestMaxKeys(t *testing.T) {
	l := ratelimit.New(ratelimit.Limits{Calls: 1, CallBurst: 1, MaxKeys: 100})
	l.Call("active", t0)
	for i := range 1000 {
		now := t0.Add(time.Duration(i+1) * time.Millisecond)
		l.Denial(fmt.Sprintf("flood-%d", i), now)
		if i%50 == 0 {
			l.Call("active", now) // refused, but keeps the entry in use
		}
	}
	if n := l.Len(); n != 100 {
		t.Errorf("%d keys tracked, want the cap of 100", n)
	}
	if ok, _ := l.Call("active", t0.Add(time.Second-time.Millisecond)); ok {
		t.Errorf("the active identity's bucket was dropped and refilled")
	}
}
