package nats

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/quota"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkViewCache measures writing and loading a host's view cache of
// a depot of small files, without servers: the part of a restart from
// the file that grows with the depot (write-s, load-s, file-MiB, and the
// heap the loaded state holds, the only tree in memory while it loads,
// as in a start). DEPOTFS_SCALE_FILES sets the count
// (100,000); a million takes about a minute:
//
//	DEPOTFS_SCALE_FILES=1000000 go test ./store/nats -run '^$' -bench ViewCache -benchtime 1x
func BenchmarkViewCache(b *testing.B) {
	files := 100000
	if n, err := strconv.Atoi(os.Getenv("DEPOTFS_SCALE_FILES")); err == nil && n > 0 {
		files = n
	}
	qs, err := quota.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	created := time.Now().UTC()
	s := &Store{opts: Options{Prefix: "bench"}, log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		viewCache: filepath.Join(b.TempDir(), "view"), treeCreated: created}
	s.uses.init()
	st := newState()
	st.quota, st.charged = qs, qs.Zero()
	now := time.Now().UTC()
	seq := uint64(0)
	for i := range files {
		if i%1000 == 0 {
			seq++
			dir := fmt.Sprintf("/scale/d%04d", i/1000)
			st.setEntry(dir, &record{Path: dir, Record: entryrec.Record{Kind: store.KindDir, Ino: seq, MTime: now, Created: now, Updated: now, Revision: seq}})
		}
		seq += 3
		p := fmt.Sprintf("/scale/d%04d/f%07d.txt", i/1000, i)
		sum := hashHex(p)
		st.setEntry(p, &record{Path: p, Record: entryrec.Record{Kind: store.KindFile, Ino: seq, Size: 300, SHA256: sum,
			Mode: 0o644, MTime: now, Created: now, Updated: now, Writer: "bench", Present: true, Revision: seq}})
		st.setBlob(sum, &blobRecord{Size: 300, ChunkSize: 1 << 20, Gen: genInline, Refs: 1})
		s.uses.touch(sum)
	}
	st.rev, st.entryRev = seq, seq
	s.view.st, s.view.opened = st, true
	st = nil
	info := &jetstream.StreamInfo{Created: created, State: jetstream.StreamState{Msgs: seq, FirstSeq: 1, LastSeq: seq}}
	var wrote, loaded, cpu time.Duration
	var heap float64
	for b.Loop() {
		start := time.Now()
		if _, err := s.writeViewCache(); err != nil {
			b.Fatal(err)
		}
		wrote += time.Since(start)
		// Only the loaded state is live while it loads, as in a start.
		empty := newState()
		empty.quota, empty.charged = qs, qs.Zero()
		s.view.st = empty
		before := liveHeap()
		start, cpu0 := time.Now(), cpuTime()
		got, _, _, err := s.readViewCache(info)
		if err != nil {
			b.Fatal(err)
		}
		loaded += time.Since(start)
		cpu += cpuTime() - cpu0
		heap += float64(liveHeap() - before)
		if got.counts.Files != int64(files) {
			b.Fatalf("loaded %d files, want %d", got.counts.Files, files)
		}
		s.view.st = got // what the next round writes
	}
	n := float64(b.N)
	if fi, err := os.Stat(s.viewCache); err == nil {
		b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	}
	b.ReportMetric(wrote.Seconds()/n, "write-s")
	b.ReportMetric(loaded.Seconds()/n, "load-s")
	b.ReportMetric(cpu.Seconds()/n, "load-cpu-s")
	b.ReportMetric(heap/n/(1<<20), "heap-MiB")
}

// cpuTime returns the CPU time the process has used, user and system,
// every thread (the collector's too): on a shared machine the figure that
// does not depend on what else runs.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// liveHeap returns the heap in use after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
