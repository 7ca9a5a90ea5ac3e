package integration_test

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// benchNeedle is the literal the search benchmark looks for; it is on one
// line of every hundredth file.
const benchNeedle = "needle-7f3a9c"

// pushBenchCorpus writes files files of about 10 KiB of text each under
// /bench with the fs tool write, four at a time, and returns the total
// size.
func pushBenchCorpus(b *testing.B, fc fsClient, files int) int64 {
	b.Helper()
	words := strings.Fields("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco laboris nisi aliquip ex ea commodo consequat")
	var total int64
	var mu sync.Mutex
	work := make(chan int)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				r := rand.New(rand.NewPCG(uint64(i), 99))
				var sb strings.Builder
				for line := 0; sb.Len() < 10<<10; line++ {
					if i%100 == 0 && line == 64 {
						sb.WriteString("here is the " + benchNeedle + " we look for\n")
						continue
					}
					for w := 0; w < 12; w++ {
						sb.WriteString(words[r.IntN(len(words))])
						sb.WriteByte(' ')
					}
					sb.WriteByte('\n')
				}
				path := fmt.Sprintf("bench/d%03d/f%05d.txt", i%100, i)
				if err := fc.call("write", map[string]any{"path": path, "content": sb.String(), "make_dirs": true}, nil); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				total += int64(sb.Len())
				mu.Unlock()
			}
		}()
	}
	for i := range files {
		select {
		case work <- i:
		case err := <-errs:
			b.Fatal(err)
		}
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return total
}

// BenchmarkSearchVsGrep compares the fs tool search, over MCP (streamable
// HTTP), with grep -r over the same 10,000 files (about 100 MiB) through
// the mount, in the same run: each iteration runs both. Metrics: the time
// of each per iteration and their ratio (mcp/grep). The first grep, on a
// cold page cache, is logged apart.
//
//	go test ./integration -run '^$' -bench SearchVsGrep -benchtime 5x
func BenchmarkSearchVsGrep(b *testing.B) {
	d := startDaemon(b, daemonConfig{transport: overHTTP, args: []string{"--tools", "fs", "--rate-calls", "0", "--rate-bytes", "0"}})
	fc := fsClient{d.client}
	start := time.Now()
	size := pushBenchCorpus(b, fc, 10000)
	b.Logf("pushed 10000 files, %.1f MiB, in %v", float64(size)/(1<<20), time.Since(start).Round(time.Millisecond))
	dir := d.path("/bench")

	grep := func(b *testing.B, flags string) time.Duration {
		b.Helper()
		t0 := time.Now()
		out, err := exec.Command("grep", flags, benchNeedle, dir).Output()
		took := time.Since(t0)
		if err != nil || strings.Count(string(out), "\n") != 100 {
			b.Fatalf("grep %s: %d lines, %v", flags, strings.Count(string(out), "\n"), err)
		}
		return took
	}
	search := func(b *testing.B, caseSensitive bool) time.Duration {
		b.Helper()
		t0 := time.Now()
		var out fsSearchReply
		err := fc.call("search", map[string]any{"root_path": "bench", "pattern": benchNeedle, "case_sensitive": caseSensitive, "max_results": 1000}, &out)
		took := time.Since(t0)
		if err != nil || out.TotalMatches != 100 || out.FilesSearched != 10000 {
			b.Fatalf("search: %d matches in %d files, %v", out.TotalMatches, out.FilesSearched, err)
		}
		return took
	}
	b.Logf("first grep -rF through the mount (cold page cache): %v", grep(b, "-rF").Round(time.Millisecond))

	for _, tt := range []struct {
		name          string
		caseSensitive bool
		grepFlags     string
	}{
		{"literal", true, "-rF"},
		{"ignore-case", false, "-rFi"},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var mcp, gr time.Duration
			n := 0
			for b.Loop() {
				mcp += search(b, tt.caseSensitive)
				gr += grep(b, tt.grepFlags)
				n++
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
			b.ReportMetric(ms(mcp), "mcp-ms/op")
			b.ReportMetric(ms(gr), "grep-ms/op")
			b.ReportMetric(float64(mcp)/float64(gr), "mcp/grep")
			b.ReportMetric(float64(size)/(1<<20)/(mcp.Seconds()/float64(n)), "mcp-MiB/s")
		})
	}
}
