package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// SharedOpener opens two Store values on one new, empty depot, as two
// hosts would (for a store that lives in one process, the same value
// twice), configured by cfg, and registers their Close with t.Cleanup.
type SharedOpener func(t *testing.T, cfg Config) (a, b store.Store)

// Syncer is implemented by stores whose Store values on other hosts see a
// write some time after it returns: Sync returns once this value has
// applied every change committed anywhere before the call. The rest of
// the contract holds without it: each Store value reads its own writes,
// and every change is seen whole, in revision order, by every value.
type Syncer interface {
	Sync(ctx context.Context) error
}

// RunShared runs the part of the suite that needs two hosts on one
// depot: what one host writes, the other sees whole (after Sync), with
// the same revisions; conditions and limits hold across hosts (two hosts
// racing for one path, increments by compare-and-set from both, a store
// limit filled from both); a chunked upload may send its chunks to either
// host; a Content opened on one host keeps reading after the other
// removes the file; and after concurrent writes from both, both hosts
// show the same tree. A single-process store passes it with the same
// value as both hosts; the suite states, that way, what the rest of it
// assumes of one process.
func RunShared(t *testing.T, open SharedOpener) {
	t.Run("SeeEachOther", func(t *testing.T) { testSeeEachOther(t, open) })
	t.Run("IfAbsentRace", func(t *testing.T) { testIfAbsentRace(t, open) })
	t.Run("CompareAndSet", func(t *testing.T) { testCompareAndSet(t, open) })
	t.Run("UploadAcrossHosts", func(t *testing.T) { testUploadAcrossHosts(t, open) })
	t.Run("ContentAfterRemoteRemove", func(t *testing.T) { testContentAfterRemoteRemove(t, open) })
	t.Run("LimitAcrossHosts", func(t *testing.T) { testLimitAcrossHosts(t, open) })
	t.Run("SameTree", func(t *testing.T) { testSameTree(t, open) })
	t.Run("ChangesOnEveryHost", func(t *testing.T) { testChangesOnEveryHost(t, open) })
}

// syncStore waits until s has applied every change committed before.
func syncStore(t testing.TB, s store.Store) {
	t.Helper()
	if sy, ok := s.(Syncer); ok {
		if err := sy.Sync(withinDeadline(t)); err != nil {
			t.Fatalf("Sync: %v", err)
		}
	}
}

func testSeeEachOther(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	ch := watch(t, b, "/", revision(t, b))
	res := put(t, a, "/d/f", pattern(3000, 1))
	ev := expect(t, ch, 0, "created /d", "created /d/f")[1]
	if ev.Revision != res.Entry.Revision || !sameEntry(ev.Entry, res.Entry) {
		t.Errorf("b's event %+v, a's result %+v", ev.Entry, res.Entry)
	}
	syncStore(t, b)
	if e := stat(t, b, "/d/f"); !sameEntry(e, res.Entry) {
		t.Errorf("b's Stat %+v, a wrote %+v", e, res.Entry)
	}
	if got := read(t, b, "/d/f"); !bytes.Equal(got, pattern(3000, 1)) {
		t.Error("b reads other bytes than a wrote")
	}
	if ra, rb := revision(t, a), revision(t, b); ra != rb {
		t.Errorf("revisions %d on a and %d on b after Sync", ra, rb)
	}
	if err := b.Remove(t.Context(), store.RemoveRequest{Path: "/d", Recursive: true}); err != nil {
		t.Fatal(err)
	}
	syncStore(t, a)
	if !gone(t, a, "/d/f") || !gone(t, a, "/d") {
		t.Error("a still shows what b removed")
	}
}

func testIfAbsentRace(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	ctx := withinDeadline(t)
	const paths = 20
	wins := make([]int, paths)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for h, s := range []store.Store{a, b} {
		wg.Go(func() {
			for i := range paths {
				_, err := s.Put(ctx, store.PutRequest{Path: "/race/f" + strconv.Itoa(i), Data: []byte{byte(h)}, IfAbsent: true})
				switch {
				case err == nil:
					mu.Lock()
					wins[i]++
					mu.Unlock()
				case !errors.Is(err, store.ErrExist):
					t.Errorf("host %d, path %d: %v", h, i, err)
				}
			}
		})
	}
	wg.Wait()
	for i, n := range wins {
		if n != 1 {
			t.Errorf("/race/f%d: %d writes with IfAbsent succeeded, want 1", i, n)
		}
	}
}

func testCompareAndSet(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	ctx := withinDeadline(t)
	put(t, a, "/counter", []byte("0"))
	syncStore(t, b)
	const each = 10
	var wg sync.WaitGroup
	for _, s := range []store.Store{a, a, b, b} {
		wg.Go(func() {
			for range each {
				for {
					e, err := s.Stat(ctx, "/counter")
					if err != nil {
						t.Error(err)
						return
					}
					c, err := s.Open(ctx, "/counter")
					if err != nil {
						t.Error(err)
						return
					}
					v := readContent(t, c)
					c.Close()
					n, _ := strconv.Atoi(string(v))
					_, err = s.Put(ctx, store.PutRequest{Path: "/counter", Data: []byte(strconv.Itoa(n + 1)), IfRevision: e.Revision})
					if err == nil {
						break
					}
					if !errors.Is(err, store.ErrRevision) {
						t.Error(err)
						return
					}
					// Another writer won; this host may not have seen it yet.
					syncStore(t, s)
				}
			}
		})
	}
	wg.Wait()
	syncStore(t, a)
	if got := string(read(t, a, "/counter")); got != strconv.Itoa(4*each) {
		t.Errorf("counter %s after %d increments by compare-and-set from two hosts", got, 4*each)
	}
}

func testUploadAcrossHosts(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	data := pattern(50_000, 9)
	parts := split(data, 5)
	f := store.PutRequest{Path: "/up/f", SHA256: Sum(data)}
	var prog store.UploadProgress
	for i := range parts {
		s := []store.Store{a, b}[i%2]
		syncStore(t, s)
		var err error
		if prog, err = s.PutChunk(t.Context(), chunk("u", parts, i, f)); err != nil {
			t.Fatalf("chunk %d on host %d: %v", i, i%2, err)
		}
	}
	if !prog.Complete || prog.Received != len(parts) {
		t.Fatalf("after every chunk: %+v", prog)
	}
	syncStore(t, a)
	for _, s := range []store.Store{a, b} {
		if got := read(t, s, "/up/f"); !bytes.Equal(got, data) {
			t.Error("the upload reads wrong")
		}
	}
}

func testContentAfterRemoteRemove(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	data := pattern(10_000, 3)
	put(t, a, "/f", data)
	syncStore(t, b)
	c, err := b.Open(t.Context(), "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := a.Remove(t.Context(), store.RemoveRequest{Path: "/f"}); err != nil {
		t.Fatal(err)
	}
	put(t, a, "/g", pattern(10_000, 4))
	syncStore(t, b)
	if got := readContent(t, c); !bytes.Equal(got, data) {
		t.Error("a Content on b changed when a removed its file")
	}
}

func testLimitAcrossHosts(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{MaxStoreBytes: 1000})
	ctx := withinDeadline(t)
	var wg sync.WaitGroup
	for h, s := range []store.Store{a, b} {
		wg.Go(func() {
			for i := range 10 {
				p := fmt.Sprintf("/h%d/f%d", h, i)
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: content(200, byte(10*h+i+1))}); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		})
	}
	wg.Wait()
	for _, s := range []store.Store{a, b} {
		syncStore(t, s)
		if st := checkStats(t, s); st.StoredBytes > 1000 || st.Files != 5 || st.Evictions != 15 {
			t.Errorf("after 20 writes of 200 bytes under a 1000-byte limit from two hosts: %+v", st)
		}
	}
}

func testSameTree(t *testing.T, open SharedOpener) {
	a, b := open(t, Config{})
	ctx := withinDeadline(t)
	var wg sync.WaitGroup
	for h, s := range []store.Store{a, b} {
		wg.Go(func() {
			for i := range 15 {
				dir := fmt.Sprintf("/t/%d", i%3)
				var err error
				switch i % 5 {
				case 0, 1, 2:
					_, err = s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("%s/h%d-%d", dir, h, i), Data: []byte{byte(i)}})
				case 3:
					_, err = s.Copy(ctx, store.CopyRequest{From: dir, To: fmt.Sprintf("/copies/h%d-%d", h, i)})
				case 4:
					_, err = s.Move(ctx, store.MoveRequest{From: dir, To: fmt.Sprintf("/moved/h%d-%d", h, i)})
				}
				if err != nil && !errors.Is(err, store.ErrNotExist) {
					t.Errorf("host %d step %d: %v", h, i, err)
				}
			}
		})
	}
	wg.Wait()
	syncStore(t, a)
	syncStore(t, b)
	sa, sb := snapshot(t, a), snapshot(t, b)
	if sa.rev != sb.rev || !slices.EqualFunc(sa.entries, sb.entries, sameEntry) {
		t.Errorf("the hosts disagree after concurrent writes:\na (rev %d) %v\nb (rev %d) %v", sa.rev, paths(sa.entries), sb.rev, paths(sb.entries))
	}
	for _, e := range sa.entries {
		if e.IsDir() {
			continue
		}
		if _, err := a.Open(ctx, e.Path); err != nil && !errors.Is(err, store.ErrNotPresent) {
			t.Errorf("Open(%s): %v", e.Path, err)
		}
	}
}
