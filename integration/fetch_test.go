package integration_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// pendingRequest is one request as guide_pending_requests lists it.
type pendingRequest struct {
	Path    string
	Size    float64
	MTime   string
	Waiters float64
}

// pendingRequests calls guide_pending_requests with wait_seconds and cursor
// (none when "") and returns the requests and the next cursor. It is safe
// to call from any goroutine.
func (d *daemon) pendingRequests(waitSeconds int, cursor string) ([]pendingRequest, string, error) {
	args := map[string]any{"wait_seconds": waitSeconds}
	if cursor != "" {
		args["cursor"] = cursor
	}
	env, err := d.tryCall("guide_pending_requests", args)
	if err != nil {
		return nil, "", err
	}
	if !env.Success {
		return nil, "", fmt.Errorf("guide_pending_requests failed: %+v", env.Error)
	}
	var out []pendingRequest
	list, _ := env.Data["requests"].([]any)
	for _, r := range list {
		m := r.(map[string]any)
		pr := pendingRequest{Path: m["path"].(string), Size: m["size"].(float64), Waiters: m["waiters"].(float64)}
		pr.MTime, _ = m["mtime"].(string)
		out = append(out, pr)
	}
	next, _ := env.Data["cursor"].(string)
	return out, next, nil
}

// listFile declares a file without sending its content.
func listFile(d *daemon, dir, name string, size int, mtime time.Time) {
	d.t.Helper()
	d.mustCall("guide_list_directory", map[string]any{"path": dir, "entries": []any{
		map[string]any{"name": name, "type": "file", "size": size, "mtime": mtime.Format(time.RFC3339)},
	}})
}

type catOutcome struct {
	out  []byte
	err  error
	took time.Duration
}

// startCats runs n cat processes on p at once and returns where their
// outcomes arrive. Each is killed at cleanup if still running.
func startCats(t *testing.T, p string, n int) <-chan catOutcome {
	t.Helper()
	out := make(chan catOutcome, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	var wg sync.WaitGroup
	for range n {
		cmd := exec.CommandContext(ctx, "cat", p)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
			}
			out <- catOutcome{stdout.Bytes(), err, time.Since(start)}
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return out
}

// TestFetchOnDemand is Proof 3: cat of a listed-but-not-pushed file blocks;
// an agent (a goroutine here) sees the request through
// guide_pending_requests, pushes the content, and cat prints exactly those
// bytes. Ten concurrent cats of one file make one request.
func TestFetchOnDemand(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	mtime := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	data := pseudoRandom(70000, 31)
	listFile(d, "/remote", "data.bin", len(data), mtime)

	cats := startCats(t, d.path("/remote/data.bin"), 1)
	reqs, _, err := d.pendingRequests(30, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 1 || reqs[0].Path != "/remote/data.bin" || reqs[0].Size != float64(len(data)) || reqs[0].MTime != "2024-05-01T12:00:00Z" {
		t.Fatalf("pending requests %+v", reqs)
	}
	select {
	case c := <-cats:
		t.Fatalf("cat finished before the content was sent: %q, %v", c.out, c.err)
	default:
	}
	d.mustCall("guide_read_file", map[string]any{"path": "/remote/data.bin", "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
	if c := <-cats; c.err != nil || !bytes.Equal(c.out, data) {
		t.Fatalf("cat printed %d bytes (%v), want the %d pushed", len(c.out), c.err, len(data))
	}

	// Ten readers of another file: one request, with ten waiters.
	before := cacheStats(d)["fetch"]["requested"]
	other := []byte("ten readers, one request\n")
	listFile(d, "/remote", "shared.txt", len(other), mtime)
	cats = startCats(t, d.path("/remote/shared.txt"), 10)
	waitFor(t, 30*time.Second, "ten programs waiting", func() bool {
		reqs, _, err := d.pendingRequests(0, "")
		return err == nil && len(reqs) == 1 && reqs[0].Waiters == 10
	})
	if got := cacheStats(d)["fetch"]["requested"] - before; got != 1 {
		t.Errorf("ten cats made %v requests, want 1", got)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/remote/shared.txt", "content": string(other)})
	for range 10 {
		if c := <-cats; c.err != nil || !bytes.Equal(c.out, other) {
			t.Errorf("cat printed %q (%v)", c.out, c.err)
		}
	}
	if reqs, _, _ := d.pendingRequests(0, ""); len(reqs) != 0 {
		t.Errorf("requests left after the answers: %+v", reqs)
	}
}

// TestFetchTimeout is Proof 4: with --fetch-timeout 2s and no agent, cat
// fails with an I/O error after about that long, and the depot is
// unchanged.
func TestFetchTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 2 * time.Second
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--fetch-timeout", timeout.String()}})
	listFile(d, "/remote", "nobody.txt", 12, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC))
	before := cacheStats(d)
	lsBefore := listing(t, d, "/remote")

	c := <-startCats(t, d.path("/remote/nobody.txt"), 1)
	if c.err == nil || !strings.Contains(c.err.Error(), "Input/output error") {
		t.Fatalf("cat: %v (%q), want an I/O error", c.err, c.out)
	}
	if c.took < timeout {
		t.Errorf("cat failed after %v, before the %v timeout", c.took, timeout)
	}
	after := cacheStats(d)
	if after["fetch"]["timed_out"] != before["fetch"]["timed_out"]+1 || after["fetch"]["pending"] != 0 {
		t.Errorf("fetch stats after the timeout: %v", after["fetch"])
	}
	if after["store"]["files"] != before["store"]["files"] || after["store"]["placeholders"] != before["store"]["placeholders"] ||
		after["store"]["stored_bytes"] != before["store"]["stored_bytes"] {
		t.Errorf("the depot changed: %v -> %v", before["store"], after["store"])
	}
	if ls := listing(t, d, "/remote"); ls != lsBefore {
		t.Errorf("ls changed:\n%s\n---\n%s", lsBefore, ls)
	}
	if !strings.Contains(d.logs.String(), "/remote/nobody.txt") || !strings.Contains(d.logs.String(), "in time") {
		t.Errorf("the log does not say which path timed out:\n%s", tail(d.logs.String(), 20))
	}
}

// TestEvictedFileFetchedAgain is Proof 5: a file evicted to make room is
// still listed, and a program that opens it gets its content fetched again
// on demand, the same way.
func TestEvictedFileFetchedAgain(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--max-store-size", "50KiB", "--max-file-size", "50KiB"}})
	first := pseudoRandom(30000, 51)
	pushBytes(d, "/ev/first.bin", first, nil)
	env := pushBytes(d, "/ev/second.bin", pseudoRandom(30000, 52), nil)
	if ev := evicted(t, env); len(ev) != 1 || ev[0] != "/ev/first.bin" {
		t.Fatalf("evicted %v, want /ev/first.bin", ev)
	}
	if fi, err := os.Stat(d.path("/ev/first.bin")); err != nil || fi.Size() != int64(len(first)) {
		t.Fatalf("the evicted file: %v, %v; want it listed with its size", fi, err)
	}

	cats := startCats(t, d.path("/ev/first.bin"), 1)
	reqs, _, err := d.pendingRequests(30, "")
	if err != nil || len(reqs) != 1 || reqs[0].Path != "/ev/first.bin" || reqs[0].Size != float64(len(first)) {
		t.Fatalf("pending requests %+v, %v", reqs, err)
	}
	pushBytes(d, "/ev/first.bin", first, nil)
	if c := <-cats; c.err != nil || !bytes.Equal(c.out, first) {
		t.Fatalf("cat of the evicted file printed %d bytes (%v)", len(c.out), c.err)
	}
}

// BenchmarkFetchRoundTrip measures, through the real binary, from open()
// of a listed file to its bytes, with an agent that long-polls
// guide_pending_requests and answers each request with guide_cache_file.
func BenchmarkFetchRoundTrip(b *testing.B) {
	d := startDaemon(b, daemonConfig{transport: overHTTP})
	ctx, cancel := context.WithCancel(context.Background())
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		cursor := ""
		for ctx.Err() == nil {
			reqs, next, err := d.pendingRequests(5, cursor)
			if err != nil {
				if ctx.Err() == nil {
					b.Error(err)
				}
				return
			}
			cursor = next
			for _, r := range reqs {
				if _, err := d.tryCall("guide_cache_file", map[string]any{"path": r.Path, "content": r.Path}); err != nil {
					b.Error(err)
				}
			}
		}
	}()
	mtime := time.Now()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		name := fmt.Sprintf("f%06d", i)
		listFile(d, "/bench", name, len("/bench/"+name), mtime)
		b.StartTimer()
		got, err := os.ReadFile(d.path("/bench/" + name))
		if err != nil || string(got) != "/bench/"+name {
			b.Fatalf("read %q, %v", got, err)
		}
	}
	b.StopTimer()
	cancel()
	<-agentDone
}
