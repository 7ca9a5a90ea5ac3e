package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// fill returns n bytes made from seed.
func fill(n int, seed byte) []byte {
	b := bytes.Repeat([]byte{seed}, n)
	if n > 1 {
		b[1] = ^seed
	}
	return b
}

func mustStat(t testing.TB, s store.Store, p string) store.Entry {
	t.Helper()
	e, err := s.Stat(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func storeStats(t testing.TB, s store.Store) store.Stats {
	t.Helper()
	st, err := s.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// reopen closes s and opens the file at path again with opts.
func reopen(t testing.TB, s *bolt.Store, path string, opts *bolt.Options) *bolt.Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return openAt(t, path, opts)
}

// poll waits until cond holds, failing t after ten seconds.
func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within the deadline", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRestartKeepsLifecycle checks that the LRU order, pins, expiry times
// and statistics survive a restart.
func TestRestartKeepsLifecycle(t *testing.T) {
	clk := newClock()
	opts := &bolt.Options{MaxStoreBytes: 400, Now: clk.Now}
	s, path := openTemp(t, opts)
	ctx := context.Background()
	mustPut(t, s, "/a", fill(100, 'a'))
	mustPut(t, s, "/b", fill(100, 'b'))
	if _, err := s.Put(ctx, store.PutRequest{Path: "/p", Data: fill(100, 'p'), Pinned: true}); err != nil {
		t.Fatal(err)
	}
	expires := clk.Now().Add(time.Minute)
	if _, err := s.Put(ctx, store.PutRequest{Path: "/t", Data: fill(100, 't'), Expires: expires}); err != nil {
		t.Fatal(err)
	}
	readAll(t, s, "/a") // /a is now more recent than /b and /t
	readAll(t, s, "/t")
	if _, err := s.Open(ctx, "/nothing"); !errors.Is(err, store.ErrNotExist) {
		t.Fatal(err)
	}
	before := storeStats(t, s)

	s = reopen(t, s, path, opts)
	if after := storeStats(t, s); after != before {
		t.Errorf("Stats changed across a restart:\nbefore %+v\nafter  %+v", before, after)
	}
	if e := mustStat(t, s, "/p"); !e.Pinned {
		t.Errorf("/p lost its pin: %+v", e)
	}
	if e := mustStat(t, s, "/t"); !e.Expires.Equal(expires) {
		t.Errorf("/t expires %v, want %v", e.Expires, expires)
	}
	res := mustPut(t, s, "/c", fill(100, 'c'))
	if res.Evicted.Count != 1 || res.Evicted.Paths[0] != "/b" {
		t.Errorf("after a restart the write evicted %+v, want /b, the least recently used", res.Evicted)
	}
	res = mustPut(t, s, "/d", fill(100, 'd'))
	if res.Evicted.Count != 1 || res.Evicted.Paths[0] != "/a" {
		t.Errorf("the next write evicted %+v, want /a (/t was read after it)", res.Evicted)
	}
	clk.Advance(time.Hour)
	if n, err := s.ExpireEntries(ctx); err != nil || n != 1 {
		t.Errorf("ExpireEntries after a restart: %d, %v; want 1", n, err)
	}
	if st := storeStats(t, s); st.Expiries != 1 || st.Evictions != 2 || st.Hits != before.Hits {
		t.Errorf("Stats %+v", st)
	}
}

// TestUsesPersisted checks when the reads' uses reach the file: not on
// the read, but with the next write, or with the background flush.
func TestUsesPersisted(t *testing.T) {
	s, _ := openTemp(t, &bolt.Options{FlushInterval: time.Hour})
	a := mustPut(t, s, "/a", []byte("a")).Entry.SHA256
	used := func() uint64 {
		t.Helper()
		u, err := bolt.PersistedUses(s)
		if err != nil {
			t.Fatal(err)
		}
		return u[a]
	}
	written := used()
	readAll(t, s, "/a")
	if got := used(); got != written {
		t.Errorf("a read wrote its use at once (%d → %d)", written, got)
	}
	mustPut(t, s, "/other", []byte("o"))
	if got := used(); got <= written {
		t.Errorf("the next write did not persist the read (use %d, written at %d)", got, written)
	}

	flushed, _ := openTemp(t, &bolt.Options{FlushInterval: time.Millisecond, SweepInterval: time.Millisecond})
	b := mustPut(t, flushed, "/b", []byte("b")).Entry.SHA256
	u, err := bolt.PersistedUses(flushed)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, flushed, "/b")
	poll(t, "background flush of a use", func() bool {
		v, err := bolt.PersistedUses(flushed)
		return err == nil && v[b] > u[b]
	})
}

// TestSweeper checks that expired files go without anyone calling
// ExpireEntries.
func TestSweeper(t *testing.T) {
	clk := newClock()
	s, _ := openTemp(t, &bolt.Options{Now: clk.Now, SweepInterval: time.Millisecond})
	if _, err := s.Put(context.Background(), store.PutRequest{Path: "/d/f", Data: []byte("f"), Expires: clk.Now().Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Second)
	poll(t, "the sweeper removing /d/f", func() bool {
		_, err := s.Stat(context.Background(), "/d")
		return errors.Is(err, store.ErrNotExist)
	})
	if st := storeStats(t, s); st.Expiries != 1 || st.Files != 0 || st.Dirs != 0 {
		t.Errorf("Stats after expiry: %+v", st)
	}
}

// TestExpireEntriesBatches expires more files than one transaction
// removes. The files are written in one batch: a commit each cost 20 s
// under -race.
func TestExpireEntriesBatches(t *testing.T) {
	clk := newClock()
	s, _ := openTemp(t, &bolt.Options{Now: clk.Now, SweepInterval: time.Hour})
	ctx := context.Background()
	const n = 1001
	var reqs []store.PutRequest
	for i := range n {
		// Expiry times in reverse order of the paths.
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/e/f%04d", i), Data: []byte("x"), Expires: clk.Now().Add(time.Duration(n-i) * time.Millisecond)})
	}
	if _, err := s.PutBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Duration(n/2) * time.Millisecond)
	if got, err := s.ExpireEntries(ctx); err != nil || got != n/2 {
		t.Errorf("ExpireEntries half way: %d, %v; want %d", got, err, n/2)
	}
	mustStat(t, s, "/e/f0000")
	clk.Advance(time.Hour)
	if got, err := s.ExpireEntries(ctx); err != nil || got != n-n/2 {
		t.Errorf("ExpireEntries: %d, %v; want %d", got, err, n-n/2)
	}
	if st := storeStats(t, s); st.Expiries != n || st.Files != 0 || st.Dirs != 0 {
		t.Errorf("Stats %+v", st)
	}
}

// TestEvictOpenContent evicts a file while a Content reads it: the reader
// keeps its bytes, and the blob goes when it closes.
func TestEvictOpenContent(t *testing.T) {
	s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: 100, ChunkSize: 16})
	data := fill(100, 'a')
	mustPut(t, s, "/a", data)
	c, err := s.Open(context.Background(), "/a")
	if err != nil {
		t.Fatal(err)
	}
	if res := mustPut(t, s, "/b", fill(100, 'b')); res.Evicted.Count != 1 {
		t.Fatalf("evicted %+v", res.Evicted)
	}
	got, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("reading evicted content still open: %d bytes, %v", len(got), err)
	}
	if st := stats(t, s); st.Orphans != 1 {
		t.Errorf("%d orphans while the evicted content is open, want 1", st.Orphans)
	}
	c.Close()
	if st := stats(t, s); st.Orphans != 0 || st.Blobs != 1 {
		t.Errorf("after Close: %+v, want the evicted blob gone", st)
	}
}

// TestUploadLimits covers the bound on what uploads in progress hold and a
// completion refused for want of room.
func TestUploadLimits(t *testing.T) {
	ctx := context.Background()
	upload := func(id, p string, data []byte, n int) ([]store.Chunk, store.PutRequest) {
		f := store.PutRequest{Path: p, SHA256: storetest.Sum(data)}
		var cs []store.Chunk
		for i := range n {
			cs = append(cs, store.Chunk{UploadID: id, Index: i, Count: n, Data: data[i*len(data)/n : (i+1)*len(data)/n], File: f})
		}
		return cs, f
	}
	t.Run("Staged", func(t *testing.T) {
		clk := newClock()
		s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: 100, UploadTimeout: time.Hour, Now: clk.Now})
		u1, _ := upload("u1", "/one", fill(90, 1), 3)
		u2, _ := upload("u2", "/two", fill(90, 2), 3)
		for _, c := range []store.Chunk{u1[0], u1[1], u2[0]} {
			if _, err := s.PutChunk(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PutChunk(ctx, u2[1]); !errors.Is(err, store.ErrLimit) {
			t.Errorf("a chunk taking uploads over the store limit: %v, want ErrLimit", err)
		}
		if st := storeStats(t, s); st.Uploads != 2 || st.UploadBytes != 90 {
			t.Errorf("Stats %+v", st)
		}
		// u1 is abandoned; an operator drops what idled a minute.
		clk.Advance(2 * time.Minute)
		if _, err := s.PutChunk(ctx, u2[1]); !errors.Is(err, store.ErrLimit) {
			t.Errorf("a chunk taking uploads over the store limit: %v, want ErrLimit", err)
		}
		if _, err := s.DropUploads(ctx, nil, -time.Second); err == nil {
			t.Error("DropUploads with a negative idle time succeeded")
		}
		if dropped, err := s.DropUploads(ctx, nil, time.Minute); err != nil || len(dropped) != 2 {
			t.Fatalf("DropUploads: %v, %v; want 2", dropped, err)
		}
		if st := storeStats(t, s); st.Uploads != 0 || st.UploadBytes != 0 {
			t.Errorf("Stats after DropUploads %+v", st)
		}
		for _, c := range u2 {
			if _, err := s.PutChunk(ctx, c); err != nil {
				t.Fatalf("u2 after the drop: %v", err)
			}
		}
		if st := storeStats(t, s); st.Uploads != 0 || st.StoredBytes != 90 {
			t.Errorf("Stats %+v", st)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		clk := newClock()
		s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: 100, UploadTimeout: time.Hour, Now: clk.Now})
		u1, _ := upload("u1", "/one", fill(90, 1), 3)
		u2, _ := upload("u2", "/two", fill(90, 2), 3)
		for _, c := range []store.Chunk{u1[0], u1[1]} {
			if _, err := s.PutChunk(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.PutChunk(ctx, u2[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutChunk(ctx, u2[1]); !errors.Is(err, store.ErrLimit) {
			t.Fatalf("a chunk beside an abandoned upload: %v, want ErrLimit", err)
		}
		clk.Advance(time.Hour)
		if n, err := s.ExpireUploads(ctx); err != nil || n != 2 {
			t.Fatalf("ExpireUploads at the timeout: %d, %v; want 2", n, err)
		}
		for _, c := range u2 {
			if _, err := s.PutChunk(ctx, c); err != nil {
				t.Fatalf("u2 after u1 timed out: %v", err)
			}
		}
	})
	t.Run("CompletionRefused", func(t *testing.T) {
		s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: 100})
		if _, err := s.Put(ctx, store.PutRequest{Path: "/pinned", Data: fill(60, 'p'), Pinned: true}); err != nil {
			t.Fatal(err)
		}
		cs, _ := upload("u", "/f", fill(60, 'f'), 2)
		if _, err := s.PutChunk(ctx, cs[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PutChunk(ctx, cs[1]); !errors.Is(err, store.ErrLimit) {
			t.Fatalf("completing with everything pinned: %v, want ErrLimit", err)
		}
		if _, err := s.Stat(ctx, "/f"); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("the refused upload's file exists: %v", err)
		}
		if _, err := s.Put(ctx, store.PutRequest{Path: "/pinned", Data: fill(60, 'p')}); err != nil {
			t.Fatal(err)
		}
		p, err := s.PutChunk(ctx, cs[0])
		if err != nil || !p.Complete || p.Result.Evicted.Count != 1 {
			t.Fatalf("retrying once /pinned is not pinned: %+v, %v", p, err)
		}
		if st := storeStats(t, s); st.Uploads != 0 || st.UploadBytes != 0 || st.StoredBytes != 60 {
			t.Errorf("Stats %+v", st)
		}
	})
}

// TestUpgradeSchema1 downgrades a file to the first layout and checks that
// Open derives the counters and indexes again (openAt verifies them).
func TestUpgradeSchema1(t *testing.T) {
	clk := newClock()
	opts := &bolt.Options{Now: clk.Now, MaxStoreBytes: 1000}
	s, path := openTemp(t, opts)
	opts.Upgrade = true
	ctx := context.Background()
	mustPut(t, s, "/old", fill(100, 'o'))
	clk.Advance(time.Second)
	mustPut(t, s, "/d/shared1", fill(100, 's'))
	mustPut(t, s, "/d/shared2", fill(100, 's'))
	for _, req := range []store.PutRequest{
		{Path: "/pinned", Data: fill(100, 'p'), Pinned: true},
		{Path: "/expiring", Data: fill(100, 'e'), Expires: clk.Now().Add(time.Minute)},
	} {
		if _, err := s.Put(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/listed", Kind: store.KindFile, Size: 5}}}); err != nil {
		t.Fatal(err)
	}
	before := storeStats(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bolt.Downgrade(path); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, opts)
	after := storeStats(t, s)
	before.Hits, before.Misses = 0, 0
	if after != before {
		t.Errorf("Stats after the upgrade:\n%+v\nwant\n%+v", after, before)
	}
	clk.Advance(time.Hour)
	if n, err := s.ExpireEntries(ctx); n != 1 || err != nil {
		t.Errorf("ExpireEntries after the upgrade: %d, %v", n, err)
	}
	// 300 stored + 800 = 1100: /old, the oldest, goes first.
	res := mustPut(t, s, "/big", fill(800, 'b'))
	if res.Evicted.Count != 1 || res.Evicted.Paths[0] != "/old" {
		t.Errorf("after the upgrade the write evicted %+v, want /old", res.Evicted)
	}
}

// TestUpgradeFromSchema2: a file written before versions existed opens,
// reads the same, and keeps versions from then on.
func TestUpgradeFromSchema2(t *testing.T) {
	s, path := openTemp(t, nil)
	ctx := t.Context()
	mustPut(t, s, "/f", fill(100, 'a'))
	mustPut(t, s, "/f", fill(100, 'b'))
	before := storeStats(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := bolt.DowngradeTo2(path); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, &bolt.Options{KeepVersions: 1, Upgrade: true})
	before.Hits, before.Misses = 0, 0
	if after := storeStats(t, s); after != before {
		t.Errorf("Stats after the upgrade:\n%+v\nwant\n%+v", after, before)
	}
	mustPut(t, s, "/f", fill(100, 'c'))
	h, err := s.History(ctx, "/f")
	if err != nil || len(h) != 2 {
		t.Fatalf("history after the upgrade: %+v, %v", h, err)
	}
}
