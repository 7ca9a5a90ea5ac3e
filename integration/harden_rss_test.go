package integration_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// peakRSS returns the peak resident set of process pid in MiB (VmHWM).
func peakRSS(t testing.TB, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// BenchmarkInflightRSS measures the server's peak RSS
// under 16 concurrent calls of 16 MiB (all must succeed) and under 16
// concurrent bodies of 100 MiB (over the limit), on default settings.
// Run with -bench (the binary is then built without the race detector):
//
//	go test -run XXX -bench InflightRSS -benchtime 1x ./integration/
func BenchmarkInflightRSS(b *testing.B) {
	for range b.N {
		d := startDaemon(b, daemonConfig{transport: overHTTP})
		base := peakRSS(b, d.cmd.Process.Pid)
		content := strings.Repeat("a", 16<<20)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed []string
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := newRawClient(b, d.url)
				st, r := c.call(i, "guide_cache_file", fmt.Sprintf(`{"path":"/rss/%d.txt","content":%q}`, i, content[:len(content)-i]))
				if st != http.StatusOK || r.Result == nil || r.Result.IsError {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("call %d: %d %.200s", i, st, r.raw))
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(failed) > 0 {
			b.Fatalf("%d of 16 calls failed: %s", len(failed), failed[0])
		}
		calls := peakRSS(b, d.cmd.Process.Pid)
		d.stop()

		d = startDaemon(b, daemonConfig{transport: overHTTP})
		body := bytes.Repeat([]byte("a"), 100<<20)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPost, d.url, bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusRequestEntityTooLarge {
						b.Errorf("body %d: status %d, want 413", i, resp.StatusCode)
					}
				}
			}()
		}
		wg.Wait()
		oversized := peakRSS(b, d.cmd.Process.Pid)
		d.stop()
		b.ReportMetric(base, "start-MiB")
		b.ReportMetric(calls, "peak-16x16MiB-calls-MiB")
		b.ReportMetric(oversized, "peak-16x100MiB-bodies-MiB")
	}
}
