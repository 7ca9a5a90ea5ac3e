package vfs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
	"github.com/depotfs/depotfs/vfs"
)

// fetchMount mounts st with a fetch broker of the given timeout and
// returns the broker's log too. The broker is closed before the mount goes.
func fetchMount(tb testing.TB, st store.Store, timeout time.Duration) (*testMount, *fetch.Broker, *logBuffer) {
	tb.Helper()
	logs := &logBuffer{}
	b := fetch.New(st, &fetch.Options{Timeout: timeout, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	m := mount(tb, st, &vfs.Options{Fetcher: b})
	tb.Cleanup(func() {
		b.Close()
		if tb.Failed() {
			tb.Logf("broker log:\n%s", logs)
		}
	})
	return m, b, logs
}

// declarePlaceholder lists a file without content and waits for the mount.
func declarePlaceholder(tb testing.TB, st store.Store, m *testMount, p string, size int64) {
	tb.Helper()
	if _, err := st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: p, Kind: store.KindFile, Size: size},
	}}); err != nil {
		tb.Fatal(err)
	}
	waitApplied(tb, st, m)
}

// waitBroker polls until the broker has pending requests and waiting
// readers as wanted.
func waitBroker(tb testing.TB, b *fetch.Broker, pending, waiting int) fetch.Stats {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := b.Stats()
		if s.Pending == pending && s.Waiting == waiting {
			return s
		}
		if time.Now().After(deadline) {
			tb.Fatalf("waiting for %d pending, %d waiting: %+v", pending, waiting, s)
		}
		time.Sleep(time.Millisecond)
	}
}

type catResult struct {
	out []byte
	err error
}

// startCat runs cat on p and returns the process and where its output
// arrives.
func startCat(tb testing.TB, p string) (*exec.Cmd, <-chan catResult) {
	tb.Helper()
	cmd := exec.Command("cat", p)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	done := make(chan catResult, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, stderr.Bytes())
		}
		done <- catResult{stdout.Bytes(), err}
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return cmd, done
}

// TestOpenFetchesPlaceholder checks that readers of a placeholder block,
// make one request between them, and all read the content once it is
// stored.
func TestOpenFetchesPlaceholder(t *testing.T) {
	st, _ := newStore(t, nil)
	m, b, _ := fetchMount(t, st, time.Minute)
	declarePlaceholder(t, st, m, "/later/data.bin", 4096)
	want := pattern(5000, 3) // not the declared size: the new version's size wins

	const readers = 10
	var wg sync.WaitGroup
	got := make([][]byte, readers)
	errs := make([]error, readers)
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = os.ReadFile(m.path("/later/data.bin"))
		}()
	}
	_, catDone := startCat(t, m.path("/later/data.bin"))
	waitBroker(t, b, 1, readers+1)
	put(t, st, nil, store.PutRequest{Path: "/later/data.bin", Data: want})
	wg.Wait()
	for i := range readers {
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Errorf("reader %d: %d bytes, %v", i, len(got[i]), errs[i])
		}
	}
	if res := <-catDone; res.err != nil || !bytes.Equal(res.out, want) {
		t.Errorf("cat: %d bytes, %v", len(res.out), res.err)
	}
	if s := b.Stats(); s.Requested != 1 || s.Fetched != 1 || s.Pending != 0 {
		t.Errorf("broker stats %+v, want one request, fetched", s)
	}
	if fi, err := os.Stat(m.path("/later/data.bin")); err != nil || fi.Size() != int64(len(want)) {
		t.Errorf("stat after fetch: %v, %v", fi, err)
	}
}

// TestOpenFetchKilledReader checks that a reader killed while it waits
// stops waiting and withdraws its request, and that a reader that stays
// keeps the request alive.
func TestOpenFetchKilledReader(t *testing.T) {
	tests := []struct {
		name   string
		signal syscall.Signal
	}{
		{"SIGKILL", syscall.SIGKILL},
		{"SIGINT", syscall.SIGINT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := newStore(t, nil)
			m, b, _ := fetchMount(t, st, time.Minute)
			declarePlaceholder(t, st, m, "/p", 10)
			first, firstDone := startCat(t, m.path("/p"))
			second, secondDone := startCat(t, m.path("/p"))
			waitBroker(t, b, 1, 2)

			if err := first.Process.Signal(tt.signal); err != nil {
				t.Fatal(err)
			}
			if res := <-firstDone; res.err == nil {
				t.Errorf("killed cat succeeded: %q", res.out)
			}
			waitBroker(t, b, 1, 1)
			if err := second.Process.Signal(tt.signal); err != nil {
				t.Fatal(err)
			}
			<-secondDone
			s := waitBroker(t, b, 0, 0)
			if s.Abandoned != 2 || s.Withdrawn != 1 || s.Fetched != 0 {
				t.Errorf("stats %+v, want 2 abandoned waits and 1 withdrawn request", s)
			}
			// The file still reads once its content comes.
			_, thirdDone := startCat(t, m.path("/p"))
			waitBroker(t, b, 1, 1)
			put(t, st, nil, store.PutRequest{Path: "/p", Data: []byte("0123456789")})
			if res := <-thirdDone; res.err != nil || string(res.out) != "0123456789" {
				t.Errorf("cat after the killed readers: %q, %v", res.out, res.err)
			}
		})
	}
}

// TestOpenFetchTimeout checks that with nobody answering, the open fails
// with EIO after the timeout, the request is withdrawn, the log names the
// path, and the store is unchanged.
func TestOpenFetchTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	st, _ := newStore(t, nil)
	m, b, logs := fetchMount(t, st, timeout)
	declarePlaceholder(t, st, m, "/nobody/answers.txt", 42)
	rev, err := st.Revision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = os.ReadFile(m.path("/nobody/answers.txt"))
	if waited := time.Since(start); waited < timeout {
		t.Errorf("failed after %v, before the %v timeout", waited, timeout)
	}
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read: %v, want EIO", err)
	}
	s := waitBroker(t, b, 0, 0)
	if s.TimedOut != 1 || s.Withdrawn != 1 {
		t.Errorf("stats %+v", s)
	}
	if logs := logs.String(); !strings.Contains(logs, "/nobody/answers.txt") || !strings.Contains(logs, "in time") {
		t.Errorf("no log line says which path timed out:\n%s", logs)
	}
	if now, err := st.Revision(context.Background()); err != nil || now != rev {
		t.Errorf("store revision %d after a timed-out fetch, was %d (%v)", now, rev, err)
	}
	if fi, err := os.Stat(m.path("/nobody/answers.txt")); err != nil || fi.Size() != 42 {
		t.Errorf("placeholder after the timeout: %v, %v", fi, err)
	}
}

// BenchmarkOpenFetch measures the latency from open() of a placeholder to
// its bytes when an agent (here a goroutine writing to the store) answers
// as soon as the request is published.
func BenchmarkOpenFetch(b *testing.B) {
	st, _ := newStore(b, nil)
	m, br, _ := fetchMount(b, st, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	agentDone := make(chan struct{})
	go func() {
		defer close(agentDone)
		for {
			snap := br.Pending()
			for _, r := range snap.Requests {
				if _, err := st.Put(ctx, store.PutRequest{Path: r.Path, Data: []byte(r.Path)}); err != nil && ctx.Err() == nil {
					b.Error(err)
				}
			}
			select {
			case <-snap.Changed:
			case <-ctx.Done():
				return
			}
		}
	}()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		p := fmt.Sprintf("/f%d", i)
		declarePlaceholder(b, st, m, p, int64(len(p)))
		b.StartTimer()
		got, err := os.ReadFile(m.path(p))
		if err != nil || string(got) != p {
			b.Fatalf("read %q, %v", got, err)
		}
	}
	b.StopTimer()
	cancel()
	<-agentDone
}

// TestPlaceholderKeepsInode: a program that looked a placeholder up (lstat)
// and opened it finds, when its open returns with the content that
// arrived, the inode it looked up (cp compares the two and skips a file
// "replaced while being copied"), with the arrived size; and so does the
// next lookup. Each of three placeholders is opened by one reader; the
// content arrives while the opens wait.
func TestPlaceholderKeepsInode(t *testing.T) {
	st, _ := newStore(t, nil)
	m, b, _ := fetchMount(t, st, time.Minute)
	names := []string{"/decl/a.txt", "/decl/b.txt", "/decl/c.txt"}
	for _, p := range names {
		declarePlaceholder(t, st, m, p, 10)
	}
	type result struct {
		before, after uint64
		size          int64
		data          []byte
		err           error
	}
	results := make([]result, len(names))
	var wg sync.WaitGroup
	for i, p := range names {
		var lst syscall.Stat_t
		if err := syscall.Lstat(m.path(p), &lst); err != nil {
			t.Fatal(err)
		}
		results[i].before = lst.Ino
		wg.Go(func() {
			r := &results[i]
			f, err := os.Open(m.path(p))
			if err != nil {
				r.err = err
				return
			}
			defer f.Close()
			var fst syscall.Stat_t
			if r.err = syscall.Fstat(int(f.Fd()), &fst); r.err != nil {
				return
			}
			r.after, r.size = fst.Ino, fst.Size
			r.data, r.err = io.ReadAll(f)
		})
	}
	waitBroker(t, b, len(names), len(names))
	for _, p := range names {
		put(t, st, nil, store.PutRequest{Path: p, Data: []byte("arrived at " + p)})
	}
	wg.Wait()
	for i, p := range names {
		r := results[i]
		var again syscall.Stat_t
		if err := syscall.Lstat(m.path(p), &again); err != nil {
			t.Fatal(err)
		}
		want := "arrived at " + p
		if r.err != nil || string(r.data) != want || r.size != int64(len(want)) {
			t.Errorf("%s: read %q, fstat size %d (%v), want %q", p, r.data, r.size, r.err, want)
		}
		if r.after != r.before || again.Ino != r.before {
			t.Errorf("%s: inode %d at lstat, %d at fstat after the open, %d at the next lstat; want one inode", p, r.before, r.after, again.Ino)
		}
	}
}
