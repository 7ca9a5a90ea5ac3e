// Command backupbench measures depotfs backup against a baseline taken in
// the same run on the same disk, and prints the ratios:
//
//   - throughput of an online backup (depotfs backup --url) and of an
//     offline one (--db) against cp of the database file followed by an
//     fsync, as the backup ends with one (goal: at least 0.5x);
//   - the p99 latency of 8 writers (guide_cache_file of small files, one
//     MCP session each) while an online backup runs, against their p99
//     without one, measured just before (goal: at most 2x).
//
// The depot is written into the database directly before depotfs starts:
// -files files of -size bytes of incompressible content. bench/backup.sh
// builds depotfs and runs it. The machine is shared and noisy: compare
// ratios, not absolute figures, and repeat.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	files := flag.Int("files", 128, "number of files in the depot")
	size := flag.Int("size", 8<<20, "size of each file in bytes")
	writers := flag.Int("writers", 8, "concurrent writers")
	quiet := flag.Duration("quiet", 5*time.Second, "how long the writers run without a backup, for the baseline p99")
	work := flag.String("dir", "", "work `dir`ectory on the disk to measure (default: a new one under /var/tmp)")
	flag.Parse()
	log.SetFlags(0)
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("/var/tmp", "backupbench-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	db := filepath.Join(dir, "depot.db")
	fill(db, *files, *size)
	fi, err := os.Stat(db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("depot: %d files of %d bytes, database %d MiB, in %s\n\n", *files, *size, fi.Size()>>20, dir)

	cpTime := timeCP(db, filepath.Join(dir, "cp.db"))
	offline := filepath.Join(dir, "offline.dfsbak")
	offTime := benchd.Timed(func() { run(*bin, "backup", "--db", db, "--to", offline, "--json") })
	os.Remove(offline)

	srv, url := benchd.Serve(*bin, "--db", db, "--no-mount")
	defer func() { srv.Process.Kill(); srv.Wait() }()
	lat := &latencies{}
	stop := startWriters(url, *writers, lat)
	time.Sleep(*quiet)
	quietLat := lat.take()
	online := filepath.Join(dir, "online.dfsbak")
	onTime := benchd.Timed(func() { run(*bin, "backup", "--url", url, "--to", online, "--json") })
	busyLat := lat.take()
	stop()
	bfi, _ := os.Stat(online)

	mib := float64(fi.Size()) / (1 << 20)
	rate := func(d time.Duration) float64 { return mib / d.Seconds() }
	fmt.Println("| what | time | MiB/s | ratio to cp |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| cp + fsync of the database | %v | %.0f | 1.00x |\n", cpTime.Round(time.Millisecond), rate(cpTime))
	fmt.Printf("| depotfs backup --db (offline) | %v | %.0f | %.2fx |\n", offTime.Round(time.Millisecond), rate(offTime), cpTime.Seconds()/offTime.Seconds())
	fmt.Printf("| depotfs backup --url (online, %d writers) | %v | %.0f | %.2fx |\n", *writers, onTime.Round(time.Millisecond), rate(onTime), cpTime.Seconds()/onTime.Seconds())
	fmt.Printf("\nbackup file %d MiB\n\n", bfi.Size()>>20)
	fmt.Println("| writers' latency | calls | p50 | p99 | p99 ratio |")
	fmt.Println("|---|---|---|---|---|")
	qp := benchd.Quantile(quietLat, 0.99)
	fmt.Printf("| without a backup | %d | %v | %v | 1.00x |\n", len(quietLat), benchd.Quantile(quietLat, 0.5), qp)
	fmt.Printf("| during the online backup | %d | %v | %v | %.2fx |\n", len(busyLat), benchd.Quantile(busyLat, 0.5), benchd.Quantile(busyLat, 0.99), float64(benchd.Quantile(busyLat, 0.99))/float64(qp))
}

// fill writes the depot into db directly.
func fill(db string, files, size int) {
	st, err := bolt.Open(db, nil)
	if err != nil {
		log.Fatal(err)
	}
	r := rand.NewChaCha8([32]byte{1, 2})
	buf := make([]byte, size)
	for i := range files {
		r.Read(buf)
		if _, err := st.Put(context.Background(), store.PutRequest{Path: fmt.Sprintf("/data/f%04d.bin", i), Data: buf}); err != nil {
			log.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
}

// timeCP copies src to dst with cp and makes the copy durable.
func timeCP(src, dst string) time.Duration {
	d := benchd.Timed(func() {
		run("cp", src, dst)
		f, err := os.Open(dst)
		if err != nil {
			log.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			log.Fatal(err)
		}
		f.Close()
	})
	os.Remove(dst)
	return d
}

func run(name string, args ...string) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		log.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// latencies collects call latencies; take returns and resets them.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d)
	l.mu.Unlock()
}

func (l *latencies) take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.all
	l.all = nil
	return out
}

// startWriters runs n writers against url until the returned stop.
func startWriters(url string, n int, lat *latencies) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for w := range n {
		c := benchd.Connect(url, "backupbench")
		wg.Go(func() {
			defer c.Close()
			for i := 0; !done.Load(); i++ {
				args := map[string]any{"path": fmt.Sprintf("/load/w%d/f%d.txt", w, i%100), "content": fmt.Sprintf("writer %d call %d\n", w, i)}
				lat.add(benchd.Timed(func() { benchd.Call(c, "guide_cache_file", args) }))
			}
		})
	}
	return func() { done.Store(true); wg.Wait() }
}
