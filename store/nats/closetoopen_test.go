package nats_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/vfs"
)

// TestCloseToOpenAcrossHosts: right after host A acknowledges a write,
// an open on host B (and a Stat of a path A just created) sees it. Four
// writers on A race four readers on B; any stale or missing read fails
// the test. DEPOTFS_CLOSE_TO_OPEN_N sets the number of writes (1,000 by
// default, 10,000 with DEPOTFS_SOAK=1, as for the figure in
// docs/several-hosts.md).
func TestCloseToOpenAcrossHosts(t *testing.T) {
	t.Parallel()
	n := 1000
	if soak {
		n = 10000
	}
	if v, err := strconv.Atoi(os.Getenv("DEPOTFS_CLOSE_TO_OPEN_N")); err == nil && v > 0 {
		n = v
	}
	c := sharedCluster(t)
	prefix := fmt.Sprintf("c%d", depots.Add(1))
	hs := hostsOf(t, c, prefix, 2)
	a, b := hs[0], hs[1]
	const workers = 4
	var stale, missing atomic.Int64
	var mu sync.Mutex
	var opens []time.Duration
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				p := fmt.Sprintf("/c2o/w%d/f%03d", w, i%50) // new files, then overwrites
				data := []byte(fmt.Sprintf("write %d by worker %d\n", i, w))
				if _, err := a.Put(context.Background(), store.PutRequest{Path: p, Data: data}); err != nil {
					t.Errorf("put %s: %v", p, err)
					return
				}
				if _, err := b.Stat(context.Background(), p); err != nil {
					missing.Add(1)
					continue
				}
				start := time.Now()
				got, err := readOnce(b, p)
				took := time.Since(start)
				if err != nil || !bytes.Equal(got, data) {
					stale.Add(1)
					continue
				}
				mu.Lock()
				opens = append(opens, took)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(opens)
	pct := func(p float64) time.Duration { return opens[int(p*float64(len(opens)-1))] }
	t.Logf("%d writes on A, each opened on B right after its acknowledgement: %d stale, %d missing; open+read on B p50 %v p99 %v max %v",
		n, stale.Load(), missing.Load(), pct(0.5), pct(0.99), opens[len(opens)-1])
	if stale.Load() > 0 || missing.Load() > 0 {
		t.Errorf("%d stale and %d missing reads on B after A acknowledged", stale.Load(), missing.Load())
	}
}

// readOnce opens p on s and reads it whole.
func readOnce(s store.Store, p string) ([]byte, error) {
	c, err := s.Open(context.Background(), p)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	buf := make([]byte, c.Size())
	_, err = c.ReadAt(buf, 0)
	return buf, err
}

// BenchmarkOpenCatchUp measures what an open costs on a host of a NATS
// depot: the round trip that catches up with the cluster, then the read
// of a small inline file; and, for comparison, a Stat of the same file,
// answered from the host's memory.
func BenchmarkOpenCatchUp(b *testing.B) {
	c := natstest.Start(b, 3)
	prefix := fmt.Sprintf("c%d", depots.Add(1))
	var hs []store.Store
	for range 2 {
		hs = append(hs, openPrefix(b, c, storetest.Config{}, prefix))
	}
	if _, err := hs[0].Put(b.Context(), store.PutRequest{Path: "/f", Data: []byte("small\n")}); err != nil {
		b.Fatal(err)
	}
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			if _, err := readOnce(hs[1], "/f"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := hs[1].Stat(b.Context(), "/f"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMountOpen measures what close-to-open costs a program on a
// host's mount: opening (and closing) a small file, looking up a name
// that does not exist, stat of a file two levels down, and listing a
// directory of 100 files, on a mount
// with it (vfs.Options.Shared over a
// Store that catches up on every open, as depotfs serves a NATS depot)
// and on a mount of the same depot without it (local reads, the kernel
// caching missing names and listings), one of each in turn in the same
// run. It reports the p50 and p99 of each in µs.
//
//	go test -run '^$' -bench BenchmarkMountOpen -benchtime 2000x ./store/nats
func BenchmarkMountOpen(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("mounting needs root")
	}
	c := natstest.Start(b, 3)
	prefix := fmt.Sprintf("c%d", depots.Add(1))
	a := openPrefix(b, c, storetest.Config{}, prefix)
	reqs := []store.PutRequest{{Path: "/f", Data: []byte("small\n")}}
	for i := range 100 {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%03d", i), Data: []byte{byte(i)}})
	}
	if _, err := a.PutBatch(b.Context(), reqs); err != nil {
		b.Fatal(err)
	}
	local := openPrefix(b, c, storetest.Config{}, prefix)
	nats.LocalReads(local.(*nats.Store))
	mounts := []struct {
		name                   string
		dir                    string
		open, miss, stat, list []time.Duration
	}{{name: "c2o"}, {name: "local"}}
	for i, st := range []store.Store{openPrefix(b, c, storetest.Config{}, prefix), local} {
		m, err := vfs.Mount(b.Context(), filepath.Join(b.TempDir(), "mnt"), st, &vfs.Options{Shared: i == 0})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := m.Unmount(); err != nil {
				b.Error(err)
			}
		})
		mounts[i].dir = m.Dir()
		deadline := time.Now().Add(10 * time.Second)
		for _, err := os.Stat(filepath.Join(m.Dir(), "f")); err != nil; _, err = os.Stat(filepath.Join(m.Dir(), "f")) {
			if time.Now().After(deadline) {
				b.Fatalf("/f not in the %s mount: %v", mounts[i].name, err)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for b.Loop() {
		for i := range mounts {
			m := &mounts[i]
			start := time.Now()
			f, err := os.Open(filepath.Join(m.dir, "f"))
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
			m.open = append(m.open, time.Since(start))
			start = time.Now()
			if _, err := os.Stat(filepath.Join(m.dir, "missing")); !errors.Is(err, iofs.ErrNotExist) {
				b.Fatalf("stat of a missing name: %v", err)
			}
			m.miss = append(m.miss, time.Since(start))
			start = time.Now()
			if _, err := os.Stat(filepath.Join(m.dir, "d", "f050")); err != nil {
				b.Fatalf("stat of a file: %v", err)
			}
			m.stat = append(m.stat, time.Since(start))
			start = time.Now()
			if des, err := os.ReadDir(filepath.Join(m.dir, "d")); err != nil || len(des) != 100 {
				b.Fatalf("listing /d: %d entries, %v", len(des), err)
			}
			m.list = append(m.list, time.Since(start))
		}
	}
	pct := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Nanoseconds()) / 1e3
	}
	for _, m := range mounts {
		b.ReportMetric(pct(m.open, 0.5), m.name+"-open-p50-µs")
		b.ReportMetric(pct(m.open, 0.99), m.name+"-open-p99-µs")
		b.ReportMetric(pct(m.miss, 0.5), m.name+"-missing-p50-µs")
		b.ReportMetric(pct(m.miss, 0.99), m.name+"-missing-p99-µs")
		b.ReportMetric(pct(m.stat, 0.5), m.name+"-stat-p50-µs")
		b.ReportMetric(pct(m.stat, 0.99), m.name+"-stat-p99-µs")
		b.ReportMetric(pct(m.list, 0.5), m.name+"-list-p50-µs")
		b.ReportMetric(pct(m.list, 0.99), m.name+"-list-p99-µs")
	}
}
