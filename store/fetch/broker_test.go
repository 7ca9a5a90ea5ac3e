package fetch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/fetch"
)

// newStore opens a bolt store in a temporary directory, closed at cleanup.
func newStore(tb testing.TB) *bolt.Store {
	tb.Helper()
	st, err := bolt.Open(filepath.Join(tb.TempDir(), "depot.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// newBroker returns a broker over st with the given timeout, closed at
// cleanup (before the store), and checks at cleanup that nothing is left
// pending.
func newBroker(tb testing.TB, st store.Store, timeout time.Duration) *fetch.Broker {
	tb.Helper()
	b := fetch.New(st, &fetch.Options{Timeout: timeout, Logger: slog.New(slog.DiscardHandler)})
	tb.Cleanup(func() {
		if s := b.Stats(); s.Pending != 0 || s.Waiting != 0 {
			tb.Errorf("at the end: %d requests pending, %d readers waiting", s.Pending, s.Waiting)
		}
		b.Close()
	})
	return b
}

// declare creates a placeholder at p with a declared size.
func declare(tb testing.TB, st store.Store, p string, size int64) {
	tb.Helper()
	if _, err := st.Declare(context.Background(), store.DeclareRequest{Entries: []store.Declaration{
		{Path: p, Kind: store.KindFile, Size: size},
	}}); err != nil {
		tb.Fatal(err)
	}
}

func put(tb testing.TB, st store.Store, p, data string) {
	tb.Helper()
	if _, err := st.Put(context.Background(), store.PutRequest{Path: p, Data: []byte(data)}); err != nil {
		tb.Fatal(err)
	}
}

// readAll reads c whole and closes it.
func readAll(tb testing.TB, c store.Content) string {
	tb.Helper()
	defer c.Close()
	b, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// waitPending polls until the broker has n pending requests with w readers
// waiting in all.
func waitPending(tb testing.TB, b *fetch.Broker, n, w int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s := b.Stats()
		if s.Pending == n && s.Waiting == w {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("waiting for %d pending / %d waiting: have %+v", n, w, s)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	data string
	err  error
}

// fetchAsync starts a Fetch and returns where its outcome arrives.
func fetchAsync(ctx context.Context, b *fetch.Broker, p string) <-chan result {
	out := make(chan result, 1)
	go func() {
		c, err := b.Fetch(ctx, p)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer c.Close()
		buf := make([]byte, c.Size())
		_, err = c.ReadAt(buf, 0)
		out <- result{data: string(buf), err: err}
	}()
	return out
}

func TestFetchImmediate(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	put(t, st, "/here", "present")
	tests := []struct {
		path    string
		want    string
		wantErr error
	}{
		{"/here", "present", nil},
		{"/missing", "", store.ErrNotExist},
		{"/", "", store.ErrIsDir},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			c, err := b.Fetch(context.Background(), tt.path)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Fetch: %v, want %v", err, tt.wantErr)
			}
			if err == nil {
				if got := readAll(t, c); got != tt.want {
					t.Errorf("read %q, want %q", got, tt.want)
				}
			}
		})
	}
	if s := b.Stats(); s.Requested != 0 {
		t.Errorf("requests published for present or missing files: %+v", s)
	}
}

// TestFetchWaitsForContent checks that many readers of one placeholder make
// one request, that the request describes the file, and that every reader
// gets the content once it is stored.
func TestFetchWaitsForContent(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	declare(t, st, "/later", 7)
	var notified atomic.Int64
	stop := b.Notify(func() { notified.Add(1) })
	defer stop()

	const readers = 10
	var outs []<-chan result
	for range readers {
		outs = append(outs, fetchAsync(context.Background(), b, "/later"))
	}
	waitPending(t, b, 1, readers)
	snap := b.Pending()
	if len(snap.Requests) != 1 {
		t.Fatalf("pending %+v, want one request", snap.Requests)
	}
	r := snap.Requests[0]
	if r.ID != 1 || snap.LastID != 1 || r.Path != "/later" || r.Size != 7 || r.Waiters != readers || r.Since.IsZero() {
		t.Errorf("request %+v (last id %d)", r, snap.LastID)
	}
	put(t, st, "/later", "content")
	for _, out := range outs {
		if res := <-out; res.err != nil || res.data != "content" {
			t.Errorf("reader got %q, %v", res.data, res.err)
		}
	}
	select {
	case <-snap.Changed:
	default:
		t.Error("the snapshot's Changed channel was not closed when the request was answered")
	}
	s := b.Stats()
	if s.Requested != 1 || s.Fetched != 1 || s.Pending != 0 || s.TimedOut != 0 {
		t.Errorf("stats %+v", s)
	}
	if n := notified.Load(); n != 2 {
		t.Errorf("listener called %d times, want 2 (published, answered)", n)
	}
}

// TestFetchGivingUp checks the ways a wait ends without content: the
// reader's context, the timeout, the entry's removal, the broker closing.
// Each leaves nothing pending.
func TestFetchGivingUp(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		end     func(t *testing.T, st store.Store, b *fetch.Broker, cancel context.CancelFunc)
		wantErr error
		stats   func(fetch.Stats) bool
	}{
		{"reader cancelled", time.Minute,
			func(t *testing.T, _ store.Store, _ *fetch.Broker, cancel context.CancelFunc) { cancel() },
			context.Canceled,
			func(s fetch.Stats) bool { return s.Abandoned == 1 && s.Withdrawn == 1 }},
		{"timeout", 50 * time.Millisecond,
			func(*testing.T, store.Store, *fetch.Broker, context.CancelFunc) {},
			fetch.ErrTimeout,
			func(s fetch.Stats) bool { return s.TimedOut == 1 && s.Withdrawn == 1 }},
		{"entry removed", time.Minute,
			func(t *testing.T, st store.Store, _ *fetch.Broker, _ context.CancelFunc) {
				if err := st.Remove(context.Background(), store.RemoveRequest{Path: "/p"}); err != nil {
					t.Fatal(err)
				}
			},
			store.ErrNotExist,
			func(s fetch.Stats) bool { return s.Fetched == 0 && s.Withdrawn == 0 }},
		{"broker closed", time.Minute,
			func(_ *testing.T, _ store.Store, b *fetch.Broker, _ context.CancelFunc) { b.Close() },
			fetch.ErrClosed,
			func(s fetch.Stats) bool { return s.Fetched == 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t)
			b := newBroker(t, st, tt.timeout)
			declare(t, st, "/p", 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			start := time.Now()
			out := fetchAsync(ctx, b, "/p")
			waitPending(t, b, 1, 1)
			tt.end(t, st, b, cancel)
			res := <-out
			if !errors.Is(res.err, tt.wantErr) {
				t.Fatalf("Fetch: %v, want %v", res.err, tt.wantErr)
			}
			if tt.wantErr == fetch.ErrTimeout {
				if !errors.Is(res.err, store.ErrNotPresent) {
					t.Errorf("timeout error %v does not wrap store.ErrNotPresent", res.err)
				}
				if waited := time.Since(start); waited < tt.timeout {
					t.Errorf("gave up after %v, before the timeout %v", waited, tt.timeout)
				}
			}
			if s := b.Stats(); s.Pending != 0 || s.Waiting != 0 || !tt.stats(s) {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

// TestFetchLastReaderWithdraws checks that a request stays while any reader
// waits, and goes with the last one.
func TestFetchLastReaderWithdraws(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	declare(t, st, "/p", 1)
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	out1 := fetchAsync(ctx1, b, "/p")
	out2 := fetchAsync(ctx2, b, "/p")
	waitPending(t, b, 1, 2)
	cancel1()
	<-out1
	waitPending(t, b, 1, 1)
	cancel2()
	<-out2
	waitPending(t, b, 0, 0)
	// A new reader publishes a new request, with a greater ID.
	out3 := fetchAsync(context.Background(), b, "/p")
	waitPending(t, b, 1, 1)
	if snap := b.Pending(); snap.Requests[0].ID != 2 || snap.LastID != 2 {
		t.Errorf("second request %+v, last id %d; want id 2", snap.Requests, snap.LastID)
	}
	put(t, st, "/p", "x")
	if res := <-out3; res.err != nil || res.data != "x" {
		t.Errorf("third reader: %q, %v", res.data, res.err)
	}
}

// TestFetchMetadataChangeKeepsWaiting checks that a change that does not
// bring content (a new listing of the placeholder) does not release readers.
func TestFetchMetadataChangeKeepsWaiting(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	declare(t, st, "/p", 1)
	out := fetchAsync(context.Background(), b, "/p")
	waitPending(t, b, 1, 1)
	declare(t, st, "/p", 2)
	put(t, st, "/other", "o")
	select {
	case res := <-out:
		t.Fatalf("reader released without content: %q, %v", res.data, res.err)
	case <-time.After(50 * time.Millisecond):
	}
	put(t, st, "/p", "yy")
	if res := <-out; res.err != nil || res.data != "yy" {
		t.Errorf("reader: %q, %v", res.data, res.err)
	}
}

// resyncStore injects a resync into every watch once asked, standing for a
// watcher that fell behind.
type resyncStore struct {
	store.Store
	mu      sync.Mutex
	watches []chan store.Event
}

func (s *resyncStore) Watch(ctx context.Context, prefix string, since uint64) (<-chan store.Event, error) {
	out := make(chan store.Event)
	s.mu.Lock()
	s.watches = append(s.watches, out)
	s.mu.Unlock()
	go func() {
		<-ctx.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.watches = slices.DeleteFunc(s.watches, func(w chan store.Event) bool { return w == out })
		close(out)
	}()
	return out, nil
}

func (s *resyncStore) resync(prefix string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		select {
		case w <- store.Event{Kind: store.EventResync, Path: prefix}:
		default:
		}
	}
}

// TestFetchResync checks that after lost events the broker looks at the
// entry itself.
func TestFetchResync(t *testing.T) {
	st := &resyncStore{Store: newStore(t)}
	b := newBroker(t, st, time.Minute)
	declare(t, st, "/p", 1)
	out := fetchAsync(context.Background(), b, "/p")
	waitPending(t, b, 1, 1)
	put(t, st, "/p", "z") // the watch never reports it
	deadline := time.Now().Add(10 * time.Second)
	for {
		st.resync("/p")
		select {
		case res := <-out:
			if res.err != nil || res.data != "z" {
				t.Errorf("reader: %q, %v", res.data, res.err)
			}
			return
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the reader was not released after a resync")
		}
	}
}

func TestNotifyStop(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	var calls atomic.Int64
	stop := b.Notify(func() { calls.Add(1) })
	stop()
	declare(t, st, "/p", 1)
	ctx, cancel := context.WithCancel(context.Background())
	out := fetchAsync(ctx, b, "/p")
	waitPending(t, b, 1, 1)
	cancel()
	<-out
	if n := calls.Load(); n != 0 {
		t.Errorf("a stopped listener was called %d times", n)
	}
}

func BenchmarkFetchRoundTrip(b *testing.B) {
	st := newStore(b)
	br := newBroker(b, st, time.Minute)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		declare(b, st, "/p", 1)
		b.StartTimer()
		out := fetchAsync(ctx, br, "/p")
		for br.Stats().Pending == 0 {
			time.Sleep(10 * time.Microsecond)
		}
		put(b, st, "/p", string(rune('a'+i%26)))
		if res := <-out; res.err != nil {
			b.Fatal(res.err)
		}
		b.StopTimer()
		if err := st.Remove(ctx, store.RemoveRequest{Path: "/p"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
