package storetest

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// clock is a fake Config.Now that stands still until advanced. It is safe
// for concurrent use.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// content returns n bytes that differ from content(n, other seed).
func content(n int, seed byte) []byte {
	b := pattern(n, seed)
	if n > 0 {
		b[0] = seed
	}
	return b
}

// putReq stores req, failing t on an error.
func putReq(t testing.TB, s store.Store, req store.PutRequest) store.PutResult {
	t.Helper()
	res, err := s.Put(t.Context(), req)
	if err != nil {
		t.Fatalf("Put(%s): %v", req.Path, err)
	}
	return res
}

func stats(t testing.TB, s store.Store) store.Stats {
	t.Helper()
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// checkStats compares what Stats says about entries and content with a
// walk of the tree, and returns the Stats.
func checkStats(t testing.TB, s store.Store) store.Stats {
	t.Helper()
	st := stats(t, s)
	var want store.Stats
	sizes := map[string]int64{}
	for _, e := range snapshot(t, s).entries {
		switch {
		case e.IsDir():
			want.Dirs++
		case e.Present:
			want.Files++
			want.LogicalBytes += e.Size
			sizes[e.SHA256] = e.Size
		default:
			want.Placeholders++
		}
	}
	for _, n := range sizes {
		want.StoredBytes += n
		want.Blobs++
	}
	got := store.Stats{Files: st.Files, Placeholders: st.Placeholders, Dirs: st.Dirs, StoredBytes: st.StoredBytes, LogicalBytes: st.LogicalBytes, Blobs: st.Blobs}
	if got != want {
		t.Errorf("Stats %+v, the tree says %+v", got, want)
	}
	if st.DedupSavedBytes() != st.LogicalBytes-st.StoredBytes {
		t.Errorf("DedupSavedBytes %d, want %d", st.DedupSavedBytes(), st.LogicalBytes-st.StoredBytes)
	}
	return st
}

// sameContentStats reports whether a and b agree on the entries, the
// content and the evictions.
func sameContentStats(a, b store.Stats) bool {
	return a.Files == b.Files && a.Placeholders == b.Placeholders && a.Dirs == b.Dirs &&
		a.StoredBytes == b.StoredBytes && a.LogicalBytes == b.LogicalBytes && a.Blobs == b.Blobs &&
		a.Evictions == b.Evictions && a.EvictedBytes == b.EvictedBytes && a.Expiries == b.Expiries
}

// wantPresent fails unless every path is a present file.
func wantPresent(t testing.TB, s store.Store, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if e := stat(t, s, p); !e.Present {
			t.Errorf("%s was evicted: %+v", p, e)
		}
	}
}

func testLimits(t *testing.T, open Opener) {
	file := func(p string, data []byte) store.PutRequest {
		return store.PutRequest{Path: p, SHA256: Sum(data)}
	}
	big := content(120, 1)
	parts := split(big, 2)
	refused := []struct {
		name  string
		cfg   Config
		setup func(t *testing.T, s store.Store)
		call  func(t *testing.T, s store.Store) error
	}{
		{
			name: "FileOverFileLimit", cfg: Config{MaxFileBytes: 100},
			setup: func(t *testing.T, s store.Store) { put(t, s, "/keep", content(100, 2)) },
			call: func(t *testing.T, s store.Store) error {
				_, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: content(101, 3)})
				return err
			},
		},
		{
			name: "FileOverStoreLimit", cfg: Config{MaxStoreBytes: 100},
			setup: func(t *testing.T, s store.Store) { put(t, s, "/keep", content(60, 2)) },
			call: func(t *testing.T, s store.Store) error {
				_, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: content(101, 3)})
				return err
			},
		},
		{
			name: "UpdateOverFileLimit", cfg: Config{MaxFileBytes: 100},
			setup: func(t *testing.T, s store.Store) { put(t, s, "/f", content(100, 2)) },
			call: func(t *testing.T, s store.Store) error {
				_, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: content(101, 3)})
				return err
			},
		},
		{
			name: "EverythingElsePinned", cfg: Config{MaxStoreBytes: 300},
			setup: func(t *testing.T, s store.Store) {
				for i, p := range []string{"/a", "/b", "/c"} {
					putReq(t, s, store.PutRequest{Path: p, Data: content(100, byte(10+i)), Pinned: true})
				}
			},
			call: func(t *testing.T, s store.Store) error {
				_, err := s.Put(t.Context(), store.PutRequest{Path: "/d", Data: content(100, 3)})
				return err
			},
		},
		{
			// Evicting /u alone would not make room, so it stays.
			name: "NotEnoughEvictable", cfg: Config{MaxStoreBytes: 300},
			setup: func(t *testing.T, s store.Store) {
				putReq(t, s, store.PutRequest{Path: "/p", Data: content(200, 10), Pinned: true})
				put(t, s, "/u", content(50, 11))
			},
			call: func(t *testing.T, s store.Store) error {
				_, err := s.Put(t.Context(), store.PutRequest{Path: "/d", Data: content(160, 3)})
				return err
			},
		},
		{
			name: "ChunkAnnouncesTooMuch", cfg: Config{MaxFileBytes: 100},
			call: func(t *testing.T, s store.Store) error {
				c := chunk("u", parts, 0, file("/f", big))
				c.TotalSize = int64(len(big))
				_, err := s.PutChunk(t.Context(), c)
				return err
			},
		},
		{
			name: "ChunksBringTooMuch", cfg: Config{MaxFileBytes: 100},
			setup: func(t *testing.T, s store.Store) {
				if _, err := s.PutChunk(t.Context(), chunk("u", parts, 0, file("/f", big))); err != nil {
					t.Fatal(err)
				}
			},
			call: func(t *testing.T, s store.Store) error {
				_, err := s.PutChunk(t.Context(), chunk("u", parts, 1, file("/f", big)))
				return err
			},
		},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, tc.cfg)
			if tc.setup != nil {
				tc.setup(t, s)
			}
			before, st := snapshot(t, s), stats(t, s)
			wantErr(t, tc.name, tc.call(t, s), store.ErrLimit)
			unchanged(t, s, before)
			if after := stats(t, s); !sameContentStats(st, after) || after.Uploads != st.Uploads || after.UploadBytes != st.UploadBytes {
				t.Errorf("Stats changed by a refused write:\nbefore %+v\nafter  %+v", st, after)
			}
			checkStats(t, s)
		})
	}
	t.Run("AtTheLimits", func(t *testing.T) {
		s := open(t, Config{MaxFileBytes: 100, MaxStoreBytes: 100})
		put(t, s, "/f", content(100, 1))
		c := chunk("u", split(content(100, 2), 2), 0, file("/g", content(100, 2)))
		c.TotalSize = 100
		if _, err := s.PutChunk(t.Context(), c); err != nil {
			t.Errorf("a chunk announcing exactly the file limit: %v", err)
		}
		if st := checkStats(t, s); st.MaxFileBytes != 100 || st.MaxStoreBytes != 100 {
			t.Errorf("Stats limits %d/%d, configured 100/100", st.MaxFileBytes, st.MaxStoreBytes)
		}
	})
	t.Run("AnnouncedSize", func(t *testing.T) {
		s := open(t, Config{})
		data := content(90, 4)
		ps := split(data, 3)
		f := file("/f", data)
		first := chunk("u", ps, 0, f)
		first.TotalSize = 90
		if _, err := s.PutChunk(t.Context(), first); err != nil {
			t.Fatal(err)
		}
		other := chunk("u", ps, 1, f)
		other.TotalSize = 91
		_, err := s.PutChunk(t.Context(), other)
		wantErr(t, "a chunk announcing another total", err, store.ErrUpload)

		short := content(80, 5)
		sp := split(short, 2)
		c := chunk("v", sp, 0, file("/g", short))
		c.TotalSize = 90
		if _, err := s.PutChunk(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, s)
		_, err = s.PutChunk(t.Context(), chunk("v", sp, 1, file("/g", short)))
		wantErr(t, "an upload ending short of its announced size", err, store.ErrUpload)
		unchanged(t, s, before)
	})
}

func testEviction(t *testing.T, open Opener) {
	// abc opens a store limited to 300 bytes holding /a, /b and /c, 100
	// distinct bytes each, written in that order.
	abc := func(t *testing.T) store.Store {
		s := open(t, Config{MaxStoreBytes: 300})
		for i, p := range []string{"/a", "/b", "/c"} {
			put(t, s, p, content(100, byte(10+i)))
		}
		return s
	}
	wantEvicted := func(t *testing.T, got store.Evictions, count int, bytes int64, paths ...string) {
		t.Helper()
		sorted := slices.Sorted(slices.Values(got.Paths))
		if got.Count != count || got.Bytes != bytes || !slices.Equal(sorted, paths) {
			t.Errorf("Evicted = %+v, want %d files, %d bytes, %q", got, count, bytes, paths)
		}
	}
	t.Run("LeastRecentlyUsed", func(t *testing.T) {
		s := abc(t)
		read(t, s, "/a")
		b := stat(t, s, "/b")
		rev := revision(t, s)
		ch := watch(t, s, "/", rev)
		res := put(t, s, "/d", content(100, 4))
		wantEvicted(t, res.Evicted, 1, 100, "/b")
		wantPresent(t, s, "/a", "/c", "/d")

		e := stat(t, s, "/b")
		if e.Present || e.SHA256 != "" || e.Kind != store.KindFile || e.Size != b.Size || !e.MTime.Equal(b.MTime) ||
			e.Ino != b.Ino || !e.Created.Equal(b.Created) || e.Updates != b.Updates || e.Revision <= rev {
			t.Errorf("evicted entry %+v, want a placeholder keeping the metadata of %+v", e, b)
		}
		_, err := s.Open(t.Context(), "/b")
		wantErr(t, "Open of an evicted file", err, store.ErrNotPresent)

		evs := map[string]store.Event{}
		for range 2 {
			ev := NextEvent(t, ch)
			evs[describe(ev)] = ev
		}
		ev, ok := evs["evicted /b"]
		if _, created := evs["created /d"]; !ok || !created {
			t.Fatalf("events %v, want created /d and evicted /b", slices.Collect(func(yield func(string) bool) {
				for k := range evs {
					if !yield(k) {
						return
					}
				}
			}))
		}
		if ev.Entry.Present || ev.Entry.Path != "/b" || ev.Revision != e.Revision {
			t.Errorf("EventEvicted %+v, want the placeholder at revision %d", ev, e.Revision)
		}
		st := checkStats(t, s)
		if st.Evictions != 1 || st.EvictedBytes != 100 || st.StoredBytes != 300 || st.Placeholders != 1 {
			t.Errorf("Stats after one eviction: %+v", st)
		}
	})
	t.Run("WriteIsUse", func(t *testing.T) {
		s := abc(t)
		if res := put(t, s, "/a", content(100, 10)); res.Status != store.StatusUnchanged {
			t.Fatalf("rewriting /a: %v", res.Status)
		}
		wantEvicted(t, put(t, s, "/d", content(100, 4)).Evicted, 1, 100, "/b")
	})
	t.Run("Several", func(t *testing.T) {
		s := abc(t)
		wantEvicted(t, put(t, s, "/d", content(250, 4)).Evicted, 3, 300, "/a", "/b", "/c")
		checkStats(t, s)
	})
	t.Run("Update", func(t *testing.T) {
		s := abc(t)
		// The old content of /c goes, 150 bytes come: 50 over, /a goes.
		res := put(t, s, "/c", content(150, 4))
		if res.Status != store.StatusUpdated || !res.Entry.Present {
			t.Errorf("update: %v %+v", res.Status, res.Entry)
		}
		wantEvicted(t, res.Evicted, 1, 100, "/a")
		wantPresent(t, s, "/b", "/c")
	})
	t.Run("Pinned", func(t *testing.T) {
		s := open(t, Config{MaxStoreBytes: 300})
		putReq(t, s, store.PutRequest{Path: "/pinned", Data: content(100, 1), Pinned: true})
		for i := range 5 {
			put(t, s, "/f"+string(rune('0'+i)), content(100, byte(20+i)))
		}
		wantPresent(t, s, "/pinned")
		if st := checkStats(t, s); st.Evictions != 3 {
			t.Errorf("Evictions = %d, want 3", st.Evictions)
		}
	})
	t.Run("SharedContent", func(t *testing.T) {
		s := open(t, Config{MaxStoreBytes: 250})
		shared := content(100, 1)
		put(t, s, "/a", shared)
		put(t, s, "/x/a2", shared)
		put(t, s, "/b", content(100, 2))
		wantEvicted(t, put(t, s, "/c", content(100, 3)).Evicted, 2, 100, "/a", "/x/a2")
		wantPresent(t, s, "/b", "/c")
		checkStats(t, s)
	})
	t.Run("Dedup", func(t *testing.T) {
		s := abc(t)
		res := put(t, s, "/copy", content(100, 10))
		if res.Status != store.StatusCreated || res.Evicted.Count != 0 {
			t.Errorf("a copy of stored content: %v, evicted %+v", res.Status, res.Evicted)
		}
		wantPresent(t, s, "/a", "/b", "/c")
	})
	t.Run("Refetch", func(t *testing.T) {
		s := abc(t)
		put(t, s, "/d", content(100, 4))
		res := put(t, s, "/a", content(100, 10))
		if res.Status != store.StatusCreated || !res.Entry.Present {
			t.Errorf("content for an evicted file: %v %+v", res.Status, res.Entry)
		}
		wantEvicted(t, res.Evicted, 1, 100, "/b")
		if got := read(t, s, "/a"); !slices.Equal(got, content(100, 10)) {
			t.Error("refetched content reads wrong")
		}
	})
	t.Run("Chunked", func(t *testing.T) {
		s := abc(t)
		data := content(100, 4)
		parts := split(data, 2)
		f := store.PutRequest{Path: "/d", SHA256: Sum(data)}
		// The chunks of an upload in progress count against the limit:
		// the first evicts, and the completion needs no more room.
		if _, err := s.PutChunk(t.Context(), chunk("u", parts, 0, f)); err != nil {
			t.Fatal(err)
		}
		if e := stat(t, s, "/a"); e.Present {
			t.Errorf("a chunk taking the store over its limit evicted nothing: /a %+v", e)
		}
		wantPresent(t, s, "/b", "/c")
		if st := checkStats(t, s); st.StoredBytes+st.UploadBytes > 300 || st.UploadBytes != 50 {
			t.Errorf("an upload in progress in a full store: %+v", st)
		}
		prog, err := s.PutChunk(t.Context(), chunk("u", parts, 1, f))
		if err != nil || !prog.Complete {
			t.Fatalf("last chunk: %+v, %v", prog, err)
		}
		wantEvicted(t, prog.Result.Evicted, 0, 0)
		wantPresent(t, s, "/b", "/c", "/d")
	})
	t.Run("ChunkRefused", func(t *testing.T) {
		s := open(t, Config{MaxStoreBytes: 300})
		put(t, s, "/a", content(100, 10))
		if _, err := s.Put(t.Context(), store.PutRequest{Path: "/p", Data: content(150, 11), Pinned: true}); err != nil {
			t.Fatal(err)
		}
		data := content(120, 4)
		parts := split(data, 3)
		f := store.PutRequest{Path: "/d", SHA256: Sum(data)}
		if _, err := s.PutChunk(t.Context(), chunk("u", parts, 0, f)); err != nil {
			t.Fatal(err)
		}
		before := stats(t, s)
		// 150 pinned + 80 staged + 100 evictable: /a goes, and that is
		// still not enough for a third chunk of an upload beside it.
		if _, err := s.PutChunk(t.Context(), chunk("u", parts, 1, f)); err != nil {
			t.Fatal(err)
		}
		if e := stat(t, s, "/a"); e.Present {
			t.Errorf("the chunk that needed room left /a: %+v", e)
		}
		other := content(180, 5)
		_, err := s.PutChunk(t.Context(), chunk("v", split(other, 2), 0, store.PutRequest{Path: "/e", SHA256: Sum(other)}))
		wantErr(t, "a chunk with nothing left to evict", err, store.ErrLimit)
		if after := checkStats(t, s); after.UploadBytes != before.UploadBytes+40 || after.Uploads != 1 {
			t.Errorf("a refused chunk was counted: %+v, before %+v", after, before)
		}
	})
	t.Run("ManyPaths", func(t *testing.T) {
		s := open(t, Config{MaxStoreBytes: 10})
		n := store.MaxEvictedPaths + 20
		shared := content(10, 1)
		for i := range n {
			put(t, s, "/many/f"+pad(i), shared)
		}
		ev := put(t, s, "/new", content(10, 2)).Evicted
		if ev.Count != n || ev.Bytes != 10 || len(ev.Paths) != store.MaxEvictedPaths {
			t.Errorf("evicting %d files: Count %d, Bytes %d, %d paths", n, ev.Count, ev.Bytes, len(ev.Paths))
		}
		if st := checkStats(t, s); st.Evictions != int64(n) || st.Placeholders != int64(n) {
			t.Errorf("Stats %+v", st)
		}
	})
}

// pad formats i with three digits.
func pad(i int) string {
	return string([]byte{byte('0' + i/100%10), byte('0' + i/10%10), byte('0' + i%10)})
}

// expireUntil runs the store's expiry (at once when it is an Expirer,
// else by waiting for its own sweeps) until done reports true.
func expireUntil(t testing.TB, s store.Store, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if e, ok := s.(Expirer); ok {
			if _, err := e.ExpireEntries(t.Context()); err != nil {
				t.Fatalf("ExpireEntries: %v", err)
			}
		}
		if done() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, waitTimeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gone reports whether p has no entry.
func gone(t testing.TB, s store.Store, p string) bool {
	t.Helper()
	_, err := s.Stat(t.Context(), p)
	if err != nil && !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat(%s): %v", p, err)
	}
	return err != nil
}

func testExpiry(t *testing.T, open Opener) {
	t.Run("Removes", func(t *testing.T) {
		clk := newClock()
		s := open(t, Config{Now: clk.Now})
		soon := clk.Now().Add(time.Second)
		putReq(t, s, store.PutRequest{Path: "/t/a", Data: []byte("a"), Expires: soon})
		putReq(t, s, store.PutRequest{Path: "/t/pinned", Data: []byte("p"), Expires: soon, Pinned: true})
		putReq(t, s, store.PutRequest{Path: "/later", Data: []byte("l"), Expires: soon.Add(time.Hour)})
		putReq(t, s, store.PutRequest{Path: "/x/y/z", Data: []byte("z"), Expires: soon})
		put(t, s, "/never", []byte("n"))
		rev := revision(t, s)
		ch := watch(t, s, "/", rev)

		clk.Advance(500 * time.Millisecond)
		if e, ok := s.(Expirer); ok {
			if n, err := e.ExpireEntries(t.Context()); n != 0 || err != nil {
				t.Errorf("ExpireEntries before anything expired: %d, %v", n, err)
			}
		}
		clk.Advance(time.Second)
		expireUntil(t, s, "expiry of /t/a and /x/y/z", func() bool { return gone(t, s, "/t/a") && gone(t, s, "/x/y/z") })
		for _, p := range []string{"/x/y", "/x"} {
			if !gone(t, s, p) {
				t.Errorf("%s survived its last child's expiry", p)
			}
		}
		wantPresent(t, s, "/t/pinned", "/later", "/never")
		var got []string
		for range 4 {
			got = append(got, describe(NextEvent(t, ch)))
		}
		slices.Sort(got)
		if want := []string{"removed /t/a", "removed /x", "removed /x/y", "removed /x/y/z"}; !slices.Equal(got, want) {
			t.Errorf("events %q, want %q", got, want)
		}
		if st := checkStats(t, s); st.Expiries != 2 {
			t.Errorf("Expiries = %d, want 2", st.Expiries)
		}
	})
	t.Run("UnpinnedLater", func(t *testing.T) {
		clk := newClock()
		s := open(t, Config{Now: clk.Now})
		when := clk.Now().Add(time.Second)
		putReq(t, s, store.PutRequest{Path: "/p", Data: []byte("p"), Expires: when, Pinned: true})
		clk.Advance(time.Hour)
		if e, ok := s.(Expirer); ok {
			if _, err := e.ExpireEntries(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		wantPresent(t, s, "/p")
		putReq(t, s, store.PutRequest{Path: "/p", Data: []byte("p"), Expires: when})
		expireUntil(t, s, "expiry of /p once unpinned", func() bool { return gone(t, s, "/p") })
	})
	t.Run("OverwriteWithoutExpiry", func(t *testing.T) {
		clk := newClock()
		s := open(t, Config{Now: clk.Now})
		putReq(t, s, store.PutRequest{Path: "/f", Data: []byte("1"), Expires: clk.Now().Add(time.Second)})
		putReq(t, s, store.PutRequest{Path: "/f", Data: []byte("2")})
		putReq(t, s, store.PutRequest{Path: "/g", Data: []byte("g"), Expires: clk.Now().Add(time.Second)})
		clk.Advance(time.Minute)
		expireUntil(t, s, "expiry of /g", func() bool { return gone(t, s, "/g") })
		wantPresent(t, s, "/f")
	})
	t.Run("Placeholder", func(t *testing.T) {
		clk := newClock()
		s := open(t, Config{Now: clk.Now, MaxStoreBytes: 100})
		putReq(t, s, store.PutRequest{Path: "/a", Data: content(100, 1), Expires: clk.Now().Add(time.Second)})
		put(t, s, "/b", content(100, 2))
		if e := stat(t, s, "/a"); e.Present || e.Expires.IsZero() {
			t.Fatalf("/a = %+v, want an evicted placeholder that still expires", e)
		}
		clk.Advance(time.Minute)
		expireUntil(t, s, "expiry of the placeholder /a", func() bool { return gone(t, s, "/a") })
		checkStats(t, s)
	})
}

func testStats(t *testing.T, open Opener) {
	t.Run("Empty", func(t *testing.T) {
		s := open(t, Config{MaxStoreBytes: 1 << 20, MaxFileBytes: 1 << 10})
		st := checkStats(t, s)
		if st != (store.Stats{MaxStoreBytes: 1 << 20, MaxFileBytes: 1 << 10}) {
			t.Errorf("new store: %+v", st)
		}
	})
	t.Run("Consistent", func(t *testing.T) {
		s := open(t, Config{})
		shared := content(300, 1)
		put(t, s, "/a", shared)
		put(t, s, "/d/b", shared)
		put(t, s, "/d/c", content(50, 2))
		_, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{
			{Path: "/p", Kind: store.KindFile, Size: 10},
			{Path: "/e", Kind: store.KindDir},
		}})
		if err != nil {
			t.Fatal(err)
		}
		st := checkStats(t, s)
		if st.Files != 3 || st.Placeholders != 1 || st.Dirs != 2 || st.StoredBytes != 350 || st.LogicalBytes != 650 ||
			st.Blobs != 2 || st.DedupSavedBytes() != 300 {
			t.Errorf("Stats %+v", st)
		}

		res := put(t, s, "/a", shared)
		if after := checkStats(t, s); res.Status != store.StatusUnchanged || after.StoredBytes != st.StoredBytes || after.Blobs != st.Blobs {
			t.Errorf("identical bytes: %v, Stats %+v, want no new storage", res.Status, after)
		}
		if res := put(t, s, "/a", content(20, 3)); res.Status != store.StatusUpdated || res.Entry.Updates != 1 {
			t.Errorf("new bytes: %v, Updates %d", res.Status, res.Entry.Updates)
		}
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/d", Recursive: true}); err != nil {
			t.Fatal(err)
		}
		checkStats(t, s)
	})
	t.Run("HitsAndMisses", func(t *testing.T) {
		s := open(t, Config{})
		put(t, s, "/f", []byte("f"))
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/p", Kind: store.KindFile, Size: 1}}}); err != nil {
			t.Fatal(err)
		}
		before := stats(t, s)
		read(t, s, "/f")
		read(t, s, "/f")
		if _, err := s.Open(t.Context(), "/p"); !errors.Is(err, store.ErrNotPresent) {
			t.Fatalf("Open of a placeholder: %v", err)
		}
		if _, err := s.Open(t.Context(), "/missing"); !errors.Is(err, store.ErrNotExist) {
			t.Fatalf("Open of nothing: %v", err)
		}
		after := stats(t, s)
		if after.Hits-before.Hits != 2 || after.Misses-before.Misses != 1 {
			t.Errorf("two hits and a miss counted as %d hits and %d misses", after.Hits-before.Hits, after.Misses-before.Misses)
		}
	})
	t.Run("Uploads", func(t *testing.T) {
		s := open(t, Config{})
		data := content(90, 1)
		parts := split(data, 3)
		f := store.PutRequest{Path: "/f", SHA256: Sum(data)}
		for i := range 2 {
			if _, err := s.PutChunk(t.Context(), chunk("u", parts, i, f)); err != nil {
				t.Fatal(err)
			}
		}
		if st := checkStats(t, s); st.Uploads != 1 || st.UploadBytes != 60 || st.StoredBytes != 0 {
			t.Errorf("an upload in progress: %+v", st)
		}
		if _, err := s.PutChunk(t.Context(), chunk("u", parts, 2, f)); err != nil {
			t.Fatal(err)
		}
		if st := checkStats(t, s); st.Uploads != 0 || st.UploadBytes != 0 || st.StoredBytes != 90 {
			t.Errorf("a completed upload: %+v", st)
		}
	})
}
