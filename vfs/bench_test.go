package vfs_test

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// BenchmarkRead256MiB reads a 256 MiB file through the mount, cold (page
// cache dropped with fadvise DONTNEED) and warm, and the same file from a
// tmpfs, with 1 MiB reads like dd bs=1M. It reports MB/s for each and the
// mount's throughput as a fraction of tmpfs's.
func BenchmarkRead256MiB(b *testing.B) {
	const size = 256 << 20
	data := pattern(size, 42)

	st, _ := newStore(b, nil)
	m := mount(b, st, nil)
	put(b, st, m, store.PutRequest{Path: "/big", Data: data})

	tmpfs := filepath.Join(b.TempDir(), "tmpfs")
	if err := os.Mkdir(tmpfs, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", tmpfs, "tmpfs", 0, "size=300m"); err != nil {
		b.Fatalf("mount tmpfs: %v", err)
	}
	b.Cleanup(func() {
		if err := syscall.Unmount(tmpfs, 0); err != nil {
			b.Errorf("unmount tmpfs: %v", err)
		}
	})
	if err := os.WriteFile(filepath.Join(tmpfs, "big"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	data = nil

	buf := make([]byte, 1<<20)
	var cold, warm, tmp time.Duration
	b.ResetTimer()
	for range b.N {
		cold += timeRead(b, m.path("/big"), buf, true, size)
		warm += timeRead(b, m.path("/big"), buf, false, size)
		tmp += timeRead(b, filepath.Join(tmpfs, "big"), buf, false, size)
	}
	mbps := func(d time.Duration) float64 { return float64(b.N) * size / 1e6 / d.Seconds() }
	b.ReportMetric(mbps(cold), "cold-MB/s")
	b.ReportMetric(mbps(warm), "warm-MB/s")
	b.ReportMetric(mbps(tmp), "tmpfs-MB/s")
	b.ReportMetric(mbps(cold)/mbps(tmp), "cold/tmpfs")
	b.ReportMetric(mbps(warm)/mbps(tmp), "warm/tmpfs")
}

// timeRead reads the file at p to the end in len(buf) pieces and returns how
// long that took; drop first evicts the file from the page cache.
func timeRead(b *testing.B, p string, buf []byte, drop bool, size int64) time.Duration {
	b.Helper()
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if drop {
		const fadvDontneed = 4
		if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontneed, 0, 0); errno != 0 {
			b.Fatalf("fadvise: %v", errno)
		}
	}
	start := time.Now()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	d := time.Since(start)
	if n != size {
		b.Fatalf("read %d bytes, want %d", n, size)
	}
	return d
}
