package vfs_test

import (
	"fmt"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// BenchmarkOpenReadClose opens, reads and closes small files through the
// mount with warm caches: the per-file cost a tree walker (grep -r, cat of
// every file) pays on a repeated pass.
func BenchmarkOpenReadClose(b *testing.B) {
	st, _ := newStore(b, nil)
	m := mount(b, st, nil)
	const n = 1000
	reqs := make([]store.PutRequest, n)
	for i := range reqs {
		reqs[i] = store.PutRequest{Path: fmt.Sprintf("/d/f%04d", i), Data: pattern(1000, byte(i))}
	}
	if _, err := st.PutBatch(b.Context(), reqs); err != nil {
		b.Fatal(err)
	}
	waitApplied(b, st, m)
	buf := make([]byte, 4096)
	b.ResetTimer()
	for i := range b.N {
		f, err := os.Open(m.path(reqs[i%n].Path))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Read(buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkWalkTree lists and reads every file of a tree of 20,000 small
// files in 100 directories on a fresh mount (-memprofile shows what the
// server keeps per file the kernel knows; the heap in use after the walk
// is reported per file).
func BenchmarkWalkTree(b *testing.B) {
	const n = 20000
	st, _ := newStore(b, nil)
	reqs := make([]store.PutRequest, 0, 1000)
	for i := range n {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d%02d/f%05d", i%100, i), Data: pattern(500, byte(i))})
		if len(reqs) == cap(reqs) {
			if _, err := st.PutBatch(b.Context(), reqs); err != nil {
				b.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	b.ResetTimer()
	for range b.N {
		m := mount(b, st, nil)
		err := filepath.WalkDir(m.Dir(), func(p string, d iofs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			_, err = os.ReadFile(p)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(ms.HeapInuse)/n, "heap-bytes/file")
		m.Unmount()
	}
}

// BenchmarkFindFresh runs find, then ls -lR, over 100,000 files in 100
// directories, each on a fresh mount: the first pass of a tree walker that
// only lists, and of one that lists attributes (-cpuprofile shows where the
// server spends its part).
func BenchmarkFindFresh(b *testing.B) {
	const n = 100000
	st, _ := newStore(b, nil)
	reqs := make([]store.PutRequest, 0, 1000)
	for i := range n {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d%02d/f%06d", i%100, i), Data: []byte{byte(i)}})
		if len(reqs) == cap(reqs) {
			if _, err := st.PutBatch(b.Context(), reqs); err != nil {
				b.Fatal(err)
			}
			reqs = reqs[:0]
		}
	}
	b.ResetTimer()
	for range b.N {
		m := mount(b, st, nil)
		start := time.Now()
		if out, err := exec.Command("find", m.Dir(), "-type", "f").CombinedOutput(); err != nil {
			b.Fatalf("find: %v\n%s", err, out)
		}
		b.ReportMetric(time.Since(start).Seconds(), "find-s")
		m.Unmount()
		m = mount(b, st, nil)
		start = time.Now()
		if out, err := exec.Command("sh", "-c", "ls -lR "+m.Dir()+" >/dev/null").CombinedOutput(); err != nil {
			b.Fatalf("ls -lR: %v\n%s", err, out)
		}
		b.ReportMetric(time.Since(start).Seconds(), "ls-lR-s")
		m.Unmount()
	}
}
