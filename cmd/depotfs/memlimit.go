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

// memoryLimitEvery is how often limitMemory re-reads the live heap.
const memoryLimitEvery = time.Second

// limitMemory keeps the Go runtime's soft memory limit at limit bytes, or
// at one and a half times the live heap when that is more, until stop is
// called. Without a limit the heap grows to twice the live heap before the
// collector runs (GOGC=100), which at 100,000 files doubled the server's
// memory; a fixed limit below the live heap would instead make the
// collector run without pause. So above limit, the collector runs when
// the heap has grown by half. limit <= 0, or GOMEMLIMIT in the environment
// (which the runtime applies itself), leaves the runtime alone.
func limitMemory(limit int64, log *slog.Logger) (stop func()) {
	if limit <= 0 {
		return func() {}
	}
	if os.Getenv("GOMEMLIMIT") != "" {
		log.Info("--memory-limit not applied: GOMEMLIMIT is set in the environment")
		return func() {}
	}
	live := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	set := func() {
		rtmetrics.Read(live)
		var n int64
		if live[0].Value.Kind() == rtmetrics.KindUint64 {
			n = int64(min(live[0].Value.Uint64(), math.MaxInt64/2))
		}
		debug.SetMemoryLimit(max(limit, n+n/2))
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
