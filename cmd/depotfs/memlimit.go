package main

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

// defaultMemoryLimit is --memory-limit's default: room for the mount's
// nodes of about 100,000 files the kernel knows (~0.8 KB of live heap
// each) plus the MCP server, with the collector's headroom.
const defaultMemoryLimit byteSize = 128 << 20

// memoryLimitEvery is how often limitMemory re-reads the live heap; idle
// returns are decided every idleEvery of those rounds (a second).
const (
	memoryLimitEvery = 100 * time.Millisecond
	idleEvery        = 10
)

// limitMemory keeps the Go runtime's soft memory limit at limit bytes, or
// more when the live heap nears it (see softLimit), and gives the heap's
// free memory back to the system once a burst of work is over (see
// idleReturn), until stop is called. Without a limit the heap grows to
// twice the live heap before the collector runs (GOGC=100), which at
// 100,000 files doubled the server's memory; a fixed limit near or below
// the live heap would instead make the collector run without pause.
// limit <= 0, or GOMEMLIMIT in the environment (which the runtime applies
// itself), leaves the runtime alone.
func limitMemory(limit int64, log *slog.Logger) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		log.Info("--memory-limit not applied: GOMEMLIMIT is set in the environment")
		return func() {}
	}
	samples := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	var (
		idle   idleReturn
		rounds int
	)
	set := func() {
		rtmetrics.Read(samples)
		var n, allocs uint64
		if samples[0].Value.Kind() == rtmetrics.KindUint64 {
			n = min(samples[0].Value.Uint64(), math.MaxInt64/2)
		}
		if samples[1].Value.Kind() == rtmetrics.KindUint64 {
			allocs = samples[1].Value.Uint64()
		}
		if rounds++; rounds%idleEvery == 0 && idle.tick(allocs, n) {
			debug.FreeOSMemory()
		}
		debug.SetMemoryLimit(softLimit(limit, int64(n)))
	}
	set()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { every(ctx, memoryLimitEvery, set) })
	return func() {
		cancel()
		wg.Wait()
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// softLimit is the runtime's soft memory limit for --memory-limit limit
// and a live heap of live bytes: limit, or more when the live heap leaves
// less room than half of itself or half of limit, whichever is more. The
// collector runs when the heap reaches the soft limit, so the room left
// above the live heap is what a cycle's work is spread over: with a fixed
// limit, a walk whose nodes brought the live heap near it made the
// collector run almost without pause (ls -lR of 100,000 files at
// --memory-limit 48MiB: 1.1-1.3 s of server CPU against 0.6-0.8 s
// without a limit, for 84 against 89 MiB of RssAnon); re-reading the
// live heap ten times a second keeps the window short.
func softLimit(limit, live int64) int64 {
	return max(limit, live+max(live/2, limit/2))
}

// Giving memory back after a burst: the heap a burst of work (pushes, a
// walk, a large read) grew stays mapped once the work is over, because
// nothing allocates any more and so the collector does not run: the
// garbage of the last cycle, the collector's headroom (up to the live heap
// again) and bbolt's pool of page buffers (one per page its last commit
// wrote, kept by sync.Pool until two collections pass) stayed in the
// server's anonymous memory, 91 MiB above an empty server's after pushes
// of 100,000 files against some 40 MB live. The runtime's scavenger
// returns only what is beyond the heap goal, so once a second of (almost)
// no allocation follows a burst, the heap is collected and its free pages
// returned (debug.FreeOSMemory), and once more a second later, which
// empties the page buffer pool the first collection only moved to its
// victim cache.
const (
	// idleAllocs is what a second may allocate and still count as idle:
	// metrics scrapes, health checks, the tickers.
	idleAllocs = 1 << 20
	// burstAllocs is the least a burst allocates before it is followed by
	// a give-back; at least the live heap's half too, so the forced
	// collections cost no more than the ones the burst itself caused.
	burstAllocs = 32 << 20
)

// idleReturn decides, once a tick, whether to give the heap's free memory
// back: after a burst of allocation, on the first idle tick and the next.
// Not safe for concurrent use (limitMemory's ticker owns it).
type idleReturn struct {
	allocs uint64 // allocated bytes at the previous tick (cumulative)
	burst  uint64 // allocated since the last give-back
	again  bool   // the last tick gave back; give back once more if still idle
}

// tick takes the cumulative allocated bytes and the live heap now, and
// reports whether to give memory back now.
func (r *idleReturn) tick(allocs, live uint64) bool {
	d := allocs - r.allocs
	r.allocs = allocs
	r.burst += d
	switch {
	case d >= idleAllocs:
		r.again = false
		return false
	case r.again:
		r.again = false
		return true
	case r.burst >= max(burstAllocs, live/2):
		r.burst, r.again = 0, true
		return true
	}
	return false
}

// every runs f every d until ctx is done.
func every(ctx context.Context, d time.Duration, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f()
		}
	}
}
