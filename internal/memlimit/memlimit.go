// Package memlimit makes a memory budget the target of the Go runtime's
// garbage collector in a long-running server: the collector runs when the
// heap reaches the budget, not each time the live heap doubles, and the
// heap's free memory goes back to the system once a burst of work is over.
//
// It owns the process's collector settings (debug.SetGCPercent and
// debug.SetMemoryLimit) while it runs; nothing else in the process may set
// them. It must not decide the budget: its caller does (depotfs's
// --memory-limit, bench/walkbench's -memory-limit).
package memlimit

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// every is how often Start re-reads the live heap; idle returns are
// decided every idleEvery of those rounds (a second).
const (
	every     = 100 * time.Millisecond
	idleEvery = 10
)

// gcPercent is the runtime's default GOGC, which rules once the live heap
// is past half the budget (see Rule).
const gcPercent = 100

// Start makes limit bytes the budget the collector works to, until stop
// is called (see Rule), and gives the heap's free memory back to the
// system once a burst of work is over (see idleReturn). limit <= 0, or
// GOMEMLIMIT or GOGC in the environment (which the runtime applies
// itself), leaves the runtime alone. stop restores the runtime's defaults
// (GOGC=100, no soft limit). Start and stop are not safe for concurrent
// use; a process calls Start once.
func Start(limit int64, log *slog.Logger) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	for _, env := range []string{"GOMEMLIMIT", "GOGC"} {
		if os.Getenv(env) != "" {
			log.Info("memory limit not applied: " + env + " is set in the environment")
			return func() {}
		}
	}
	samples := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	var (
		idle   = idleReturn{limit: uint64(limit)}
		rounds int
		last   = Rule{Percent: gcPercent, Limit: math.MaxInt64}
	)
	set := func() {
		rtmetrics.Read(samples)
		var live, allocs uint64
		if samples[0].Value.Kind() == rtmetrics.KindUint64 {
			live = min(samples[0].Value.Uint64(), math.MaxInt64/2)
		}
		if samples[1].Value.Kind() == rtmetrics.KindUint64 {
			allocs = samples[1].Value.Uint64()
		}
		if rounds++; rounds%idleEvery == 0 && idle.tick(allocs, live) {
			debug.FreeOSMemory()
		}
		if r := Of(limit, int64(live)); r != last {
			apply(r, last)
			last = r
		}
	}
	set()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				set()
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
		debug.SetGCPercent(gcPercent)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// apply sets r in the runtime, last being what is set now, in the order
// that never leaves the collector without a trigger between the two
// calls: GOGC turned off after the soft limit is set, turned on before
// the limit is lifted.
func apply(r, last Rule) {
	if r.Percent < 0 {
		debug.SetMemoryLimit(r.Limit)
		debug.SetGCPercent(r.Percent)
		return
	}
	debug.SetGCPercent(r.Percent)
	if r.Limit != last.Limit {
		debug.SetMemoryLimit(r.Limit)
	}
}

// Rule is the collector's settings for a budget and a live heap.
type Rule struct {
	Percent int   // GOGC: -1 for off
	Limit   int64 // the soft memory limit in bytes
}

// Of is the rule for a budget of limit bytes and a live heap of live
// bytes. While the live heap is at most half the budget, GOGC is off and
// the budget is the soft limit, the only trigger: the collector runs when
// the heap reaches the budget, so a walk of 100,000 files that allocates
// 120 MB with a live heap of 70 MB collects once or twice instead of
// every time the heap doubles from 10 MB. Past half the budget, the
// budget would leave less room than the live heap and the collector would
// run ever more often as the live heap nears it; so GOGC=100 rules there,
// with no soft limit: the heap may grow to twice the live heap, and the
// runtime sets that goal at the end of each cycle from the heap the cycle
// marked. A soft limit of our own above the budget (half the live heap
// above it, re-read ten times a second) lagged behind a walk adding nodes:
// each cycle started with less room than the rule said and ls -lR of a
// million files cost 1.37-1.62 times a file what it cost at 100,000.
func Of(limit, live int64) Rule {
	if live <= limit/2 {
		return Rule{Percent: -1, Limit: limit}
	}
	return Rule{Percent: gcPercent, Limit: math.MaxInt64}
}

// Giving memory back after a burst: the heap a burst of work (pushes, a
// walk, a large read) grew stays mapped once the work is over, because
// nothing allocates any more and so the collector does not run: the
// garbage of the last cycle, the collector's headroom (up to the budget,
// or the live heap again past it) and bbolt's pool of page buffers (one
// per page its last commit wrote, kept by sync.Pool until two collections
// pass) stayed in the server's anonymous memory, 91 MiB above an empty
// server's after pushes of 100,000 files against some 40 MB live. The
// runtime's scavenger returns only what is beyond the heap goal, so once a
// second of (almost) no allocation follows a burst, the heap is collected
// and its free pages returned (debug.FreeOSMemory), and once more a second
// later, which empties the page buffer pool the first collection only
// moved to its victim cache.
//
// A walk's nodes are live until the kernel forgets their inodes, which
// it does on its own schedule (memory pressure, a cache drop), long after
// the walk's give-back; then they are garbage, but nothing collects them
// while the server is idle: past half the budget the heap goal is twice
// the live heap of the last cycle. So while the live heap is above half
// the budget, an idle server collects and gives back again after 2 idle
// seconds, then 4, 8, and so on up to every laterMax: what the kernel
// forgot goes back within that, for a full collection every few minutes
// while it does not (about a second of CPU at a million files known).
const (
	// idleAllocs is what a second may allocate and still count as idle:
	// metrics scrapes, health checks, the tickers.
	idleAllocs = 1 << 20
	// burstAllocs is the least a burst allocates before it is followed by
	// a give-back; at least the live heap's half too, so the forced
	// collections cost no more than the ones the burst itself caused.
	burstAllocs = 32 << 20
	// laterFirst and laterMax bound the idle ticks between two give-backs
	// of a live heap above half the budget.
	laterFirst = 2
	laterMax   = 256
)

// idleReturn decides, once a tick, whether to give the heap's free memory
// back: after a burst of allocation, on the first idle tick and the next;
// and while the live heap is above half the budget, after idle stretches
// that double from laterFirst to laterMax ticks. Not safe for concurrent
// use (Start's ticker owns it).
type idleReturn struct {
	limit  uint64 // the budget in bytes
	allocs uint64 // allocated bytes at the previous tick (cumulative)
	burst  uint64 // allocated since the last give-back
	again  bool   // the last tick gave back; give back once more if still idle
	idle   int    // idle ticks since the last give-back
	wait   int    // idle ticks before giving back a live heap above half the budget
}

// tick takes the cumulative allocated bytes and the live heap now, and
// reports whether to give memory back now.
func (r *idleReturn) tick(allocs, live uint64) bool {
	d := allocs - r.allocs
	r.allocs = allocs
	r.burst += d
	switch {
	case d >= idleAllocs:
		r.again, r.idle = false, 0
		return false
	case r.again:
		r.again, r.idle = false, 0
		return true
	case r.burst >= max(burstAllocs, live/2):
		r.burst, r.again, r.idle, r.wait = 0, true, 0, laterFirst
		return true
	case live <= r.limit/2:
		r.idle, r.wait = 0, laterFirst
		return false
	}
	r.wait = max(r.wait, laterFirst)
	if r.idle++; r.idle < r.wait {
		return false
	}
	r.idle, r.wait = 0, min(2*r.wait, laterMax)
	return true
}
