package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkSeveralHosts pushes small files through host A of a depot on a
// 3-node NATS cluster and reads them cold (never read before) through the
// mount of host B, and does the same with one depotfs on the embedded
// bolt store (push and read on the one host) in the same run; it reports
// milliseconds per file for each and the ratios nats/bolt. Pushes are
// guide_cache_file calls from 4 concurrent clients, like agents.
//
//	go test ./integration -run '^$' -bench SeveralHosts -benchtime 1x
func BenchmarkSeveralHosts(b *testing.B) {
	const files, size, clients, rounds = 300, 4 << 10, 4, 3
	for range b.N {
		b.StopTimer()
		single := startDaemon(b, daemonConfig{transport: overHTTP})
		h := startHostsB(b, 2)
		b.StartTimer()
		// The two stores take turns, a third of the files at a time, so a
		// change in the machine's load weighs on both alike.
		var boltPush, natsPush, boltRead, natsRead time.Duration
		per := files / rounds
		for r := range rounds {
			boltPush += pushFiles(b, single, r*per, per, size, clients)
			natsPush += pushFiles(b, h.all[0], r*per, per, size, clients)
		}
		waitContentB(b, h.all[1], files-1, size)
		for r := range rounds {
			boltRead += readFiles(b, single, r*per, per, size)
			natsRead += readFiles(b, h.all[1], r*per, per, size)
		}
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / files }
		b.ReportMetric(ms(boltPush), "bolt-push-ms/file")
		b.ReportMetric(ms(natsPush), "nats-push-ms/file")
		b.ReportMetric(float64(natsPush)/float64(boltPush), "push-nats/bolt")
		b.ReportMetric(ms(boltRead), "bolt-coldread-ms/file")
		b.ReportMetric(ms(natsRead), "nats-coldread-ms/file")
		b.ReportMetric(float64(natsRead)/float64(boltRead), "coldread-nats/bolt")
	}
}

func benchContent(i, size int) []byte { return pseudoRandom(size, uint64(i)+1000) }

// pushFiles pushes files small files, numbered from first, through d from
// clients goroutines and returns how long that took.
func pushFiles(b *testing.B, d *daemon, first, files, size, clients int) time.Duration {
	b.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	var failed sync.Once
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for i := range work {
				env, err := d.tryCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/bench/f%05d", i), "content": string(benchText(i, size))})
				if err != nil || !env.Success {
					failed.Do(func() { b.Errorf("push %d: %v %+v", i, err, env.Error) })
				}
			}
		})
	}
	for i := range files {
		work <- first + i
	}
	close(work)
	wg.Wait()
	return time.Since(start)
}

// benchText is printable content for file i.
func benchText(i, size int) []byte {
	b := benchContent(i, size)
	for j := range b {
		b[j] = 'a' + b[j]%26
	}
	return b
}

// readFiles reads files files, numbered from first, through d's mount
// once and returns how long that took.
func readFiles(b *testing.B, d *daemon, first, files, size int) time.Duration {
	b.Helper()
	start := time.Now()
	for i := first; i < first+files; i++ {
		got, err := os.ReadFile(d.path(fmt.Sprintf("/bench/f%05d", i)))
		if err != nil || !bytes.Equal(got, benchText(i, size)) {
			b.Fatalf("reading file %d through %s: %d bytes, %v", i, d.mount, len(got), err)
		}
	}
	return time.Since(start)
}

// waitContentB waits until the last pushed file's entry is on d (hosts
// apply changes in order, so then every one is).
func waitContentB(b *testing.B, d *daemon, last, size int) {
	b.Helper()
	waitFor(b, 30*time.Second, "the last file on B", func() bool {
		fi, err := os.Stat(d.path(fmt.Sprintf("/bench/f%05d", last)))
		return err == nil && fi.Size() == int64(size)
	})
}

// BenchmarkSeveralHostsPushTree times `depotfs push` of a directory of
// small files (20,000 of 0.1-4 KiB in 100 directories;
// DEPOTFS_PUSH_FILES changes the count) to a depot on a 3-node NATS
// cluster and to one on the embedded bolt store, in the same run, and
// reports both in seconds and the ratio nats/bolt. bench/push.sh runs it.
func BenchmarkSeveralHostsPushTree(b *testing.B) {
	files := 20000
	if n, err := strconv.Atoi(os.Getenv("DEPOTFS_PUSH_FILES")); err == nil && n > 0 {
		files = n
	}
	src := filepath.Join(b.TempDir(), "tree")
	for i := range files {
		p := filepath.Join(src, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, benchText(i, 100+i*37%4000), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	push := func(d *daemon) time.Duration {
		start := time.Now()
		code, stdout, stderr := runDepotfsWith(b, time.Hour, "", nil, "push", "--url", d.url, "--to", "/bench", src)
		took := time.Since(start)
		if code != 0 {
			b.Fatalf("push to %s: exit %d\n%s\n%s", d.url, code, stdout, stderr)
		}
		return took
	}
	for range b.N {
		b.StopTimer()
		single := startDaemon(b, daemonConfig{transport: overHTTP})
		h := startHostsB(b, 1)
		b.StartTimer()
		boltTook := push(single)
		natsTook := push(h.all[0])
		b.ReportMetric(boltTook.Seconds(), "bolt-s")
		b.ReportMetric(natsTook.Seconds(), "nats-s")
		b.ReportMetric(float64(natsTook)/float64(boltTook), "nats/bolt")
		b.Logf("push of %d small files: bolt %v, nats %v (nats/bolt %.2f)", files, boltTook.Round(time.Millisecond), natsTook.Round(time.Millisecond), float64(natsTook)/float64(boltTook))
	}
}
