package integration_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestTailFollowsUpdates runs tail -F on a file and pushes three updates:
// each is a new file version with its own inode number, like a
// rename-replace on a local filesystem, so tail follows every one.
func TestTailFollowsUpdates(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	const path = "/logs/app.log"
	d.mustCall("guide_cache_file", map[string]any{"path": path, "content": "version 0\n"})
	var out lockedBuffer
	// tail polls a FUSE mount (inotify cannot see its changes); -s 0.1
	// polls every 100 ms.
	cmd := exec.Command("tail", "-F", "-s", "0.1", "-n", "+1", d.path(path))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "tail to print version 0", func() bool { return strings.Contains(out.String(), "version 0") })
	for i := 1; i <= 3; i++ {
		line := fmt.Sprintf("version %d", i)
		d.mustCall("guide_cache_file", map[string]any{"path": path, "content": fmt.Sprintf("version %d\n", i)})
		waitFor(t, 10*time.Second, "tail to print "+line, func() bool { return strings.Contains(out.String(), line) })
	}
}

// TestDirMtimeFollowsPushes checks that a directory's mtime moves when a
// file is pushed into it (Python's import cache and git's untracked cache
// depend on it), and that it is the same after a restart.
func TestDirMtimeFollowsPushes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/pkg/a.py", "content": "A = 1\n"})
	before, err := os.Stat(d.path("/pkg"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a clock tick apart, not readiness
	d.mustCall("guide_cache_file", map[string]any{"path": "/pkg/b.py", "content": "B = 2\n"})
	after, err := os.Stat(d.path("/pkg"))
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().After(before.ModTime()) {
		t.Fatalf("/pkg mtime %v after a push into it, was %v", after.ModTime(), before.ModTime())
	}
	d = d.restart()
	again, err := os.Stat(d.path("/pkg"))
	if err != nil {
		t.Fatal(err)
	}
	if !again.ModTime().Equal(after.ModTime()) {
		t.Errorf("/pkg mtime %v after a restart, was %v", again.ModTime(), after.ModTime())
	}
}

// TestDfShowsStoreLimit checks df and getconf on the mount: the size is
// --max-store-size, the use is the stored content, names reach 255 bytes.
func TestDfShowsStoreLimit(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "64MiB", "--max-file-size", "16MiB"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/f", "content": strings.Repeat("x", 1<<20)})
	fields := strings.Fields(runProgram(t, "df", "-B1", "--output=size,used", d.mount))
	if len(fields) != 4 || fields[2] != strconv.Itoa(64<<20) || fields[3] != strconv.Itoa(1<<20) {
		t.Errorf("df says %q, want size %d and %d used", fields, 64<<20, 1<<20)
	}
	if got := strings.TrimSpace(runProgram(t, "getconf", "NAME_MAX", d.mount)); got != "255" {
		t.Errorf("getconf NAME_MAX = %s, want 255", got)
	}
}

// TestNoErrorsReadingAHotFile reads a file from four goroutines while it is
// updated up to 200 times a second, until at least hotUpdates updates
// were acknowledged: every read must succeed (no ESTALE) and return one
// whole version. It counts updates rather than asserting a rate, so a slow
// machine makes it longer, not flaky.
func TestNoErrorsReadingAHotFile(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	const path = "/hot/state.json"
	const rate, duration, hotUpdates = 200, 3 * time.Second, 400
	version := func(i int) string {
		// Sizes vary, so a mix of two versions would show.
		return fmt.Sprintf("{\"version\": %d, \"pad\": %q}\n", i, strings.Repeat("p", i%97))
	}
	d.mustCall("guide_cache_file", map[string]any{"path": path, "content": version(0)})

	var stop atomic.Bool
	var reads, estale, failed, torn atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				b, err := os.ReadFile(d.path(path))
				reads.Add(1)
				switch {
				case errors.Is(err, syscall.ESTALE):
					estale.Add(1)
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				default:
					var v int
					if _, err := fmt.Sscanf(string(b), "{\"version\": %d,", &v); err != nil || !bytes.Equal(b, []byte(version(v))) {
						torn.Add(1)
					}
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	start := time.Now()
	var writes int
	var acked atomic.Int64
	var writers sync.WaitGroup
	// Several writers in flight, as several agents would be, so the
	// rate does not depend on one call's latency.
	calls := make(chan int, 8)
	for range 8 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range calls {
				if env, err := d.tryCall("guide_cache_file", map[string]any{"path": path, "content": version(i)}); err != nil || !env.Success {
					t.Errorf("update %d: %v %+v", i, err, env.Error)
					continue
				}
				acked.Add(1)
			}
		}()
	}
	deadline := start.Add(2 * time.Minute)
	for time.Since(start) < duration || acked.Load() < hotUpdates {
		if time.Now().After(deadline) {
			t.Errorf("only %d updates acknowledged in %v; the test needs %d", acked.Load(), time.Since(start).Round(time.Second), hotUpdates)
			break
		}
		<-tick.C
		writes++
		calls <- writes
	}
	close(calls)
	writers.Wait()
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d updates in %v (%.0f/s), %d reads: %d ESTALE, %d other errors, %d torn",
		acked.Load(), elapsed.Round(time.Millisecond), float64(acked.Load())/elapsed.Seconds(), reads.Load(), estale.Load(), failed.Load(), torn.Load())
	if estale.Load()+failed.Load()+torn.Load() > 0 {
		t.Errorf("readers of a hot file got %d ESTALE, %d other errors (first: %v), %d torn reads; want none",
			estale.Load(), failed.Load(), firstErr.Load(), torn.Load())
	}
}
