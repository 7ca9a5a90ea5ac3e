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
func TestLimitMemory(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const limit = 64 << 20
	runtime.GC() // what an earlier test left is not live
	stop := limitMemory(limit, quiet)
	sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(sample)
	heap := int64(sample[0].Value.Uint64())
	if got, want := debug.SetMemoryLimit(-1), max(limit, heap+heap/2); got != want {
		stop()
		t.Fatalf("memory limit %d with %d bytes live, want %d", got, heap, want)
	}
	live := make([]byte, 96<<20)
	for i := range live {
		live[i] = byte(i)
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
