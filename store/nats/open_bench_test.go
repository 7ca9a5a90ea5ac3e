package nats_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// openSink keeps the last store BenchmarkOpenLarge opened, so that the
// in-use view of -memprofile shows what a host holds.
var openSink *nats.Store

// BenchmarkOpenLarge measures what a host pays to open a depot that holds
// many small files (inline, as depotfs push stores them): the time Open
// takes to read the tree and the live heap it then holds, with the host
// that wrote them closed so only the opening host's memory counts, and
// the time an ordered consumer takes to receive the same messages
// without applying them (read-only-s, the floor of Open). It then opens
// the depot again from the view cache the first host wrote when it
// closed (cached-s, cached-heap-MiB; cache-write-s is the write at close,
// cache-MiB the file's size). DEPOTFS_SCALE_FILES sets the count
// (20,000); cached-cpu-s is the opening process's CPU time (the servers
// run in their own). To profile a host's start:
//
//	go test ./store/nats -run '^$' -bench OpenLarge -benchtime 3x -cpuprofile cpu.out -memprofile mem.out
func BenchmarkOpenLarge(b *testing.B) {
	files := 20000
	if n, err := strconv.Atoi(os.Getenv("DEPOTFS_SCALE_FILES")); err == nil && n > 0 {
		files = n
	}
	c := natstest.Start(b, 3)
	const prefix = "openlarge"
	wc := c.Connect(b)
	// Long limits: a million files written on a loaded machine.
	w, err := nats.Open(b.Context(), wc, &nats.Options{Prefix: prefix, Timeout: 2 * time.Minute, WriteTimeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	const perBatch = 1000 // three records a file, within the servers' 10,000
	for i := 0; i < files; i += perBatch {
		reqs := make([]store.PutRequest, 0, perBatch)
		for j := i; j < min(i+perBatch, files); j++ {
			reqs = append(reqs, store.PutRequest{
				Path: fmt.Sprintf("/scale/d%04d/f%07d.txt", j/1000, j),
				Data: fmt.Appendf(nil, "file %d: %0*d\n", j, 100+j*37%400, j),
			})
		}
		if _, err := w.PutBatch(b.Context(), reqs); err != nil {
			b.Fatal(err)
		}
	}
	// Closed with their connections: a connection keeps a closed store's
	// consumer, and so its state, reachable for a while.
	w.Close()
	wc.Close()
	freed := collected(w)
	var opened, read, cached, cachedCPU, written time.Duration
	var cachedHeap float64
	cache := filepath.Join(b.TempDir(), "view")
	opts := nats.Options{Prefix: prefix, ViewCache: cache, Timeout: 2 * time.Minute}
	for b.Loop() {
		os.Remove(cache)
		b.StopTimer()
		read += readBucket(b, c, "KV_"+prefix+"-tree")
		b.StartTimer()
		b.StopTimer()
		openSink = nil
		before := heapAfterFree(b, freed)
		b.StartTimer()
		start := time.Now()
		nc := c.Connect(b)
		s, err := nats.Open(b.Context(), nc, &opts)
		if err != nil {
			b.Fatal(err)
		}
		opened += time.Since(start)
		if nats.ViewCacheLoaded(s) != 0 {
			b.Fatal("the first open loaded a view cache")
		}
		b.StopTimer()
		after := heapAfterFree(b, nil)
		st, err := s.Stats(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if st.Files != int64(files) {
			b.Fatalf("opened a depot of %d files, want %d", st.Files, files)
		}
		heap := float64(after) - float64(before)
		b.ReportMetric(heap/float64(files), "heap-B/file")
		b.ReportMetric(heap/(1<<20), "heap-MiB")
		start = time.Now()
		s.Close() // writes the view cache
		written += time.Since(start)
		nc.Close()
		freed = collected(s)

		before = heapAfterFree(b, freed)
		start, cpu0 := time.Now(), nats.CPUTime()
		nc = c.Connect(b)
		s, err = nats.Open(b.Context(), nc, &opts)
		if err != nil {
			b.Fatal(err)
		}
		cached += time.Since(start)
		cachedCPU += nats.CPUTime() - cpu0
		if nats.ViewCacheLoaded(s) == 0 {
			b.Fatal("the second open read the whole tree, not its view cache")
		}
		after = heapAfterFree(b, nil)
		cachedHeap += float64(after) - float64(before)
		if st, err := s.Stats(b.Context()); err != nil || st.Files != int64(files) {
			b.Fatalf("opened from the view cache a depot of %d files (%v), want %d", st.Files, err, files)
		}
		if fi, err := os.Stat(cache); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "cache-MiB")
		}
		s.Close()
		nc.Close()
		freed = collected(s)
		openSink = s
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(cached.Seconds()/n, "cached-s")
	b.ReportMetric(cachedCPU.Seconds()/n, "cached-cpu-s")
	b.ReportMetric(cachedHeap/n/(1<<20), "cached-heap-MiB")
	b.ReportMetric(written.Seconds()/n, "cache-write-s")
	b.ReportMetric(float64(files)/(opened.Seconds()/float64(b.N)), "files/s")
	b.ReportMetric(read.Seconds()/float64(b.N), "read-only-s")
}

// heapAfterFree returns the live heap once the store whose cleanup closes
// freed (nil: none) is collected: a closed store stays reachable from its
// connection's goroutines for a moment after they are closed.
func heapAfterFree(b *testing.B, freed chan struct{}) uint64 {
	for deadline := time.Now().Add(10 * time.Second); freed != nil; {
		runtime.GC()
		select {
		case <-freed:
			freed = nil
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				b.Fatal("a closed store is still reachable 10 s after its connection closed")
			}
		}
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// readBucket returns how long an ordered consumer takes to receive every
// message of stream name, as Open's does, applying nothing: the floor of
// Open's time, what the servers and the connection cost.
func readBucket(b *testing.B, c *natstest.Cluster, name string) time.Duration {
	nc := c.Connect(b)
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	st, err := js.Stream(b.Context(), name)
	if err != nil {
		b.Fatal(err)
	}
	last := st.CachedInfo().State.LastSeq
	cons, err := st.OrderedConsumer(b.Context(), jetstream.OrderedConsumerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if meta, err := m.Metadata(); err == nil && meta.Sequence.Stream == last {
			close(done)
		}
	}, jetstream.PullExpiry(2*time.Second), jetstream.PullHeartbeat(500*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Stop()
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		b.Fatalf("%s: not read to its last message within 10 minutes", name)
	}
	return time.Since(start)
}

// collected returns a channel closed once s is garbage collected.
func collected(s *nats.Store) chan struct{} {
	c := make(chan struct{})
	runtime.AddCleanup(s, func(c chan struct{}) { close(c) }, c)
	return c
}
