package main

import (
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"testing"
	"time"
)

// TestLimitMemory checks that --memory-limit becomes the runtime's soft
// limit, rises to 1.5 times a live heap above it instead of making the
// collector run without pause, and is lifted by stop; GOMEMLIMIT wins.
// TestSoftLimit checks the room it leaves.
func TestLimitMemory(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const limit = 64 << 20
	runtime.GC() // what an earlier test left is not live
	stop := limitMemory(limit, quiet)
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	heap := int64(sample[0].Value.Uint64())
	if got, want := debug.SetMemoryLimit(-1), softLimit(limit, heap); got != want {
		stop()
		t.Fatalf("memory limit %d with %d bytes live, want %d", got, heap, want)
	}
	live := make([]byte, 96<<20)
	for i := 0; i < len(live); i += 4096 {
		live[i] = byte(i >> 12) // a write a page, not a byte: under -race 16 s
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) < int64(len(live))*3/2 {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("memory limit %d with %d bytes live, want at least 1.5 times that", debug.SetMemoryLimit(-1), len(live))
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	stop()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d after stop, want none", got)
	}

	t.Setenv("GOMEMLIMIT", "1GiB")
	stop = limitMemory(limit, quiet)
	defer stop()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit %d with GOMEMLIMIT set, want the runtime's own (none here)", got)
	}
}

// TestIdleReturn checks when the heap is given back: on the first idle
// tick after a burst of at least 32 MiB (and half the live heap) and on
// the tick after it, never during the burst, never after small work.
func TestIdleReturn(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name  string
		ticks []uint64 // allocated in each second
		live  uint64
		gives []bool // a give-back at each tick
	}{
		{"burst then idle", []uint64{20 * mib, 20 * mib, 0, 0, 0}, 10 * mib, []bool{false, false, true, true, false}},
		{"small work", []uint64{5 * mib, 5 * mib, 0, 0}, 10 * mib, []bool{false, false, false, false}},
		{"small work adds up", []uint64{20 * mib, 0, 0, 15 * mib, 0}, 10 * mib, []bool{false, false, false, false, true}},
		{"work resumes between the two", []uint64{40 * mib, 0, 2 * mib, 0}, 10 * mib, []bool{false, true, false, false}},
		{"a large live heap needs a larger burst", []uint64{40 * mib, 0, 40 * mib, 0}, 120 * mib, []bool{false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r idleReturn
			var allocs uint64 = 100 * mib
			r.tick(allocs, tc.live) // the start: what came before is not this burst
			r.burst = 0
			for i, a := range tc.ticks {
				allocs += a
				if got := r.tick(allocs, tc.live); got != tc.gives[i] {
					t.Errorf("tick %d (%d MiB allocated): give back %v, want %v", i, a/mib, got, tc.gives[i])
				}
			}
		})
	}
}

// TestLimitMemoryGivesBack keeps 64 MiB live and allocates 56 MiB of
// garbage, less than the collector's headroom, then idles: the garbage
// and the free pages go back to the system within a few seconds. Without
// the give-back they stay mapped: nothing allocates, so nothing collects.
func TestLimitMemoryGivesBack(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	stop := limitMemory(1<<30, quiet)
	defer stop()
	var garbage [][]byte
	for range 56 {
		b := make([]byte, 1<<20)
		b[0] = 1
		garbage = append(garbage, b)
	}
	runtime.KeepAlive(garbage)
	mapped := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	heap := func() uint64 {
		rtmetrics.Read(mapped)
		return mapped[0].Value.Uint64() + mapped[1].Value.Uint64() + mapped[2].Value.Uint64()
	}
	deadline := time.Now().Add(10 * time.Second)
	for heap() > 80<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("heap of %d MiB still mapped 10 s after the garbage, with 64 MiB live", heap()>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

// TestSoftLimit checks the room the soft limit leaves above the live heap:
// at least half the live heap and half of --memory-limit, never below it.
func TestSoftLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct{ limit, live, want int64 }{
		{128 * mib, 10 * mib, 128 * mib},  // far below: the limit
		{128 * mib, 64 * mib, 128 * mib},  // half the limit left
		{128 * mib, 100 * mib, 164 * mib}, // near it: half the limit above the live heap, not 28 MiB
		{128 * mib, 200 * mib, 300 * mib}, // above it: half the live heap
	} {
		if got := softLimit(tc.limit, tc.live); got != tc.want {
			t.Errorf("softLimit(%d MiB, %d MiB live) = %d MiB, want %d MiB", tc.limit/mib, tc.live/mib, got/mib, tc.want/mib)
		}
	}
}
