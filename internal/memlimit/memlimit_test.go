package memlimit

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

// settings reads the collector's settings without changing them.
func settings() Rule {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return Rule{Percent: p, Limit: debug.SetMemoryLimit(-1)}
}

// TestStart checks that the budget becomes the collector's only trigger
// (GOGC off) while the live heap is below half of it, that GOGC=100 with
// no soft limit rules once the live heap is past half, that stop restores
// the runtime's defaults, and that GOMEMLIMIT or GOGC in the environment
// wins.
func TestStart(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const limit = 64 << 20
	runtime.GC() // what an earlier test left is not live
	stop := Start(limit, quiet)
	if got, want := settings(), (Rule{Percent: -1, Limit: limit}); got != want {
		stop()
		t.Fatalf("settings %+v with a small live heap, want %+v", got, want)
	}
	live := make([]byte, 48<<20)
	for i := 0; i < len(live); i += 4096 {
		live[i] = byte(i >> 12) // a write a page, not a byte: under -race 16 s
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	want := Rule{Percent: gcPercent, Limit: math.MaxInt64}
	for settings() != want {
		if time.Now().After(deadline) {
			stop()
			t.Fatalf("settings %+v with %d bytes live, want %+v", settings(), len(live), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	stop()
	if got := settings(); got != want {
		t.Errorf("settings %+v after stop, want the runtime's defaults %+v", got, want)
	}

	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, "1GiB")
			if env == "GOGC" {
				t.Setenv(env, "200")
			}
			stop := Start(limit, quiet)
			defer stop()
			if got := settings(); got != want {
				t.Errorf("settings %+v with %s set, want the runtime's own %+v", got, env, want)
			}
		})
	}
}

// TestOf checks the rule at the edges: the budget and no GOGC up to half
// of it live, GOGC=100 and no soft limit past that.
func TestOf(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		limit, live int64
		want        Rule
	}{
		{128 * mib, 10 * mib, Rule{-1, 128 * mib}},
		{128 * mib, 64 * mib, Rule{-1, 128 * mib}},
		{128 * mib, 65 * mib, Rule{gcPercent, math.MaxInt64}},
		{128 * mib, 2000 * mib, Rule{gcPercent, math.MaxInt64}},
	} {
		if got := Of(tc.limit, tc.live); got != tc.want {
			t.Errorf("Of(%d MiB, %d MiB live) = %+v, want %+v", tc.limit/mib, tc.live/mib, got, tc.want)
		}
	}
}

// TestIdleReturn checks when the heap is given back: on the first idle
// tick after a burst of at least 32 MiB (and half the live heap) and on
// the tick after it, never during the burst, never after small work; and
// while the live heap is past half the budget, after idle stretches of 2,
// 4, 8 ticks.
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
		{"a small live heap is not collected again", []uint64{40 * mib, 0, 0, 0, 0, 0, 0, 0, 0}, 10 * mib,
			[]bool{false, true, true, false, false, false, false, false, false}},
		{"a live heap past half the budget is, ever less often", []uint64{80 * mib, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 100 * mib,
			[]bool{false, true, true, false, true, false, false, false, true, false, false, false, false, false, false, false, true}},
		{"work puts it off", []uint64{80 * mib, 0, 0, 0, 2 * mib, 0, 0}, 100 * mib,
			[]bool{false, true, true, false, false, false, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := idleReturn{limit: 128 * mib}
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

// TestStartGivesBack keeps 64 MiB live and allocates 56 MiB of garbage,
// less than the collector's headroom, then idles: the garbage and the
// free pages go back to the system within a few seconds. Without the
// give-back they stay mapped: nothing allocates, so nothing collects.
func TestStartGivesBack(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	stop := Start(1<<30, quiet)
	defer stop()
	var garbage [][]byte
	for range 56 {
		b := make([]byte, 1<<20)
		b[0] = 1
		garbage = append(garbage, b)
	}
	runtime.KeepAlive(garbage)
	deadline := time.Now().Add(10 * time.Second)
	for heapMapped() > 80<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("heap of %d MiB still mapped 10 s after the garbage, with 64 MiB live", heapMapped()>>20)
		}
		time.Sleep(50 * time.Millisecond)
	}
	runtime.KeepAlive(live)
}

// heapMapped is the heap's memory the process holds from the system:
// objects, free and unused spans, not what was released.
func heapMapped() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64()
}
