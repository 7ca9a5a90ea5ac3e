package integration_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestBulkPushDefaults is issue 10's defaults: a daemon started with only a
// small --max-store-size starts (the default --max-file-size follows it),
// and a loopback client without credentials pushing 600 small files, 8 at
// a time, is never rate limited.
func TestBulkPushDefaults(t *testing.T) {
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "3584KiB"}})
	stats := d.mustCall("guide_cache_stats", map[string]any{})
	limits, _ := stats.Data["limits"].(map[string]any)
	if got := limits["max_file_bytes"]; got != float64(3584<<10) {
		t.Errorf("max_file_bytes = %v, want %d (the store limit)", got, 3584<<10)
	}
	const files, inFlight = 600, 8
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, files)
	for range inFlight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= files; i = next.Add(1) {
				env, err := d.tryCall("guide_cache_file", map[string]any{"path": fmt.Sprintf("/bulk/f%04d.txt", i), "content": fmt.Sprintf("file %d\n", i)})
				switch {
				case err != nil:
					errs <- err
				case !env.Success:
					errs <- fmt.Errorf("file %d: %+v", i, env.Error)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
