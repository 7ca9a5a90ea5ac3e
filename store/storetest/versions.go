package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// testVersions checks store.Versions: histories trimmed to KeepVersions,
// restores, the tree at a snapshot while writers change it, holds and
// their release, eviction that never takes held content, and snapshot
// expiry.
func testVersions(t *testing.T, open Opener) {
	t.Run("History", func(t *testing.T) { testHistory(t, open) })
	t.Run("Restore", func(t *testing.T) { testRestore(t, open) })
	t.Run("Removed", func(t *testing.T) { testRemovedHistory(t, open) })
	t.Run("SnapshotIsolation", func(t *testing.T) { testSnapshotIsolation(t, open) })
	t.Run("HoldAndRelease", func(t *testing.T) { testHoldAndRelease(t, open) })
	t.Run("EvictionRespectsHolds", func(t *testing.T) { testEvictionHolds(t, open) })
	t.Run("HistoryEvictedFirst", func(t *testing.T) { testHistoryEvicted(t, open) })
	t.Run("SnapshotRequests", func(t *testing.T) { testSnapshotRequests(t, open) })
	t.Run("SnapshotExpiry", func(t *testing.T) { testSnapshotExpiry(t, open) })
	t.Run("SnapshotInGroup", func(t *testing.T) { testSnapshotInGroup(t, open) })
	t.Run("GroupWrites", func(t *testing.T) { testGroupWrites(t, open) })
	t.Run("BatchTwice", func(t *testing.T) { testBatchTwice(t, open) })
	t.Run("ExpiredUnlisted", func(t *testing.T) { testExpiredUnlisted(t, open) })
}

// history returns p's history, failing t on an error.
func history(t testing.TB, s store.Store, p string) []store.Entry {
	t.Helper()
	h, err := s.History(t.Context(), p)
	if err != nil {
		t.Fatalf("History(%s): %v", p, err)
	}
	return h
}

// readAt returns the whole content of p at revision rev.
func readAt(t testing.TB, s store.Store, p string, rev uint64) []byte {
	t.Helper()
	c, err := s.OpenAt(t.Context(), p, rev)
	if err != nil {
		t.Fatalf("OpenAt(%s, %d): %v", p, rev, err)
	}
	defer c.Close()
	return readContent(t, c)
}

func snapshotOf(t testing.TB, s store.Store, req store.SnapshotRequest) store.Snapshot {
	t.Helper()
	snap, err := s.CreateSnapshot(t.Context(), req)
	if err != nil {
		t.Fatalf("CreateSnapshot(%+v): %v", req, err)
	}
	return snap
}

func testHistory(t *testing.T, open Opener) {
	for _, keep := range []int{0, 1, 3} {
		t.Run(fmt.Sprintf("Keep%d", keep), func(t *testing.T) {
			s := open(t, Config{KeepVersions: keep})
			var revs []uint64
			for i := range 6 {
				revs = append(revs, put(t, s, "/d/f", content(100+i, byte(i))).Entry.Revision)
			}
			put(t, s, "/d/f", content(105, 5)) // the same bytes: no new version
			h := history(t, s, "/d/f")
			if len(h) != 1+keep {
				t.Fatalf("history of %d entries with KeepVersions %d, want %d: %+v", len(h), keep, 1+keep, h)
			}
			for i, e := range h {
				want := 5 - i
				if e.Revision != revs[want] || e.SHA256 != Sum(content(100+want, byte(want))) {
					t.Fatalf("history[%d] = revision %d sha %s, want the write at %d", i, e.Revision, e.SHA256, revs[want])
				}
				if got := readAt(t, s, "/d/f", e.Revision); !bytes.Equal(got, content(100+want, byte(want))) {
					t.Fatalf("OpenAt(%d) read %d bytes that differ from that write", e.Revision, len(got))
				}
			}
			if _, err := s.StatAt(t.Context(), "/d/f", revs[0]); keep < 5 && !errors.Is(err, store.ErrNotExist) {
				t.Fatalf("StatAt a trimmed version: %v, want ErrNotExist", err)
			}
			if st := stats(t, s); st.Versions != int64(keep) {
				t.Fatalf("Stats.Versions %d, want %d", st.Versions, keep)
			}
			if _, err := s.History(t.Context(), "/nothing"); !errors.Is(err, store.ErrNotExist) {
				t.Fatalf("History of nothing: %v, want ErrNotExist", err)
			}
		})
	}
}

func testRestore(t *testing.T, open Opener) {
	s := open(t, Config{KeepVersions: 3})
	put(t, s, "/before", []byte("b"))
	first := put(t, s, "/f", []byte("first")).Entry
	put(t, s, "/f", []byte("second"))
	before := put(t, s, "/f", []byte("third")).Entry
	res, err := s.Copy(t.Context(), store.CopyRequest{From: "/f", FromRevision: first.Revision, To: "/f", Writer: "w"})
	if err != nil {
		t.Fatalf("restoring revision %d: %v", first.Revision, err)
	}
	e := res.Entry
	if e.Revision <= before.Revision || e.Ino != first.Ino || e.Updates != before.Updates+1 || e.SHA256 != first.SHA256 {
		t.Fatalf("restored %+v, want revision > %d, inode %d, updates %d, sha %s", e, before.Revision, first.Ino, before.Updates+1, first.SHA256)
	}
	if got := read(t, s, "/f"); string(got) != "first" {
		t.Fatalf("restored file reads %q", got)
	}
	if h := history(t, s, "/f"); len(h) != 4 || h[1].SHA256 != before.SHA256 {
		t.Fatalf("history after the restore: %+v, want the overwritten third version kept", h)
	}
	if next := put(t, s, "/f", []byte("fourth")).Entry; next.Revision <= e.Revision {
		t.Fatalf("the write after a restore has revision %d, not above %d", next.Revision, e.Revision)
	}
	if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/f", FromRevision: e.Revision, To: "/g"}); err != nil {
		t.Fatalf("copying an earlier version elsewhere: %v", err)
	} else if got := read(t, s, "/g"); string(got) != "first" {
		t.Fatalf("copy of an earlier version reads %q", got)
	}
	put(t, s, "/dir/x", []byte("x"))
	check := refusal(t, s)
	_, err = s.Copy(t.Context(), store.CopyRequest{From: "/dir", FromRevision: revision(t, s), To: "/dir2"})
	wantErr(t, "restoring a directory", err, fs.ErrInvalid)
	_, err = s.Copy(t.Context(), store.CopyRequest{From: "/f", FromRevision: first.Revision - 1, To: "/f"})
	wantErr(t, "restoring a revision before the file", err, store.ErrNotExist)
	check()
}

func testRemovedHistory(t *testing.T, open Opener) {
	s := open(t, Config{KeepVersions: 2})
	put(t, s, "/a/f", []byte("one"))
	last := put(t, s, "/a/f", []byte("two")).Entry
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/a/f"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(t.Context(), "/a/f"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("Stat after Remove: %v", err)
	}
	h := history(t, s, "/a/f")
	if len(h) != 2 || h[0].Revision != last.Revision {
		t.Fatalf("history of a removed file: %+v, want its two last versions", h)
	}
	if got := readAt(t, s, "/a/f", last.Revision); string(got) != "two" {
		t.Fatalf("the removed file at %d reads %q", last.Revision, got)
	}
	if _, err := s.StatAt(t.Context(), "/a/f", revision(t, s)); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("StatAt after the removal: %v, want ErrNotExist", err)
	}
	if _, err := s.Copy(t.Context(), store.CopyRequest{From: "/a/f", FromRevision: last.Revision, To: "/a/f"}); err != nil {
		t.Fatalf("undoing the removal: %v", err)
	}
	if got := read(t, s, "/a/f"); string(got) != "two" {
		t.Fatalf("the undone removal reads %q", got)
	}
}

// treeAt walks the tree at revision rev (rev 0: the live tree) and
// returns each path's kind and content hash.
func treeAt(ctx context.Context, s store.Store, rev uint64, prefix string) (map[string]string, error) {
	out := map[string]string{}
	var walk func(dir string) error
	walk = func(dir string) error {
		var es []store.Entry
		var err error
		if rev == 0 {
			es, err = s.ReadDir(ctx, dir)
		} else {
			es, err = s.ReadDirAt(ctx, dir, rev)
		}
		if err != nil {
			return err
		}
		for _, e := range es {
			out[e.Path] = e.Kind.String() + " " + e.SHA256
			if e.IsDir() {
				if err := walk(e.Path); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return out, walk(prefix)
}

// checkTreeAt fails unless the tree at snap is want, every file's bytes
// (read with OpenAt) and entry (StatAt) included.
func checkTreeAt(ctx context.Context, s store.Store, snap store.Snapshot, want map[string]string) error {
	got, err := treeAt(ctx, s, snap.Revision, snap.Prefix)
	if err != nil {
		return fmt.Errorf("walking the tree at %d: %w", snap.Revision, err)
	}
	if len(got) != len(want) {
		return fmt.Errorf("the tree at %d has %d entries, want %d", snap.Revision, len(got), len(want))
	}
	for p, w := range want {
		if got[p] != w {
			return fmt.Errorf("%s at %d is %q, want %q", p, snap.Revision, got[p], w)
		}
		e, err := s.StatAt(ctx, p, snap.Revision)
		if err != nil || e.Kind.String()+" "+e.SHA256 != w {
			return fmt.Errorf("StatAt(%s, %d) = %+v, %v; want %q", p, snap.Revision, e, err, w)
		}
		if e.IsDir() {
			continue
		}
		c, err := s.OpenAt(ctx, p, snap.Revision)
		if err != nil {
			return fmt.Errorf("OpenAt(%s, %d): %w", p, snap.Revision, err)
		}
		b := make([]byte, c.Size())
		_, err = c.ReadAt(b, 0)
		c.Close()
		if err != nil || Sum(b) != e.SHA256 {
			return fmt.Errorf("OpenAt(%s, %d) read sha %s, %v; want %s", p, snap.Revision, Sum(b), err, e.SHA256)
		}
	}
	return nil
}

func testSnapshotIsolation(t *testing.T, open Opener) {
	s := open(t, Config{})
	const dirs, files, writers = 4, 8, 4
	for d := range dirs {
		for f := range files {
			put(t, s, fmt.Sprintf("/t/d%d/f%d", d, f), content(64, byte(d*files+f)))
		}
	}
	put(t, s, "/outside", []byte("o"))
	want, err := treeAt(t.Context(), s, 0, "/t")
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshotOf(t, s, store.SnapshotRequest{Name: "s", Prefix: "/t", Writer: "w"})
	if snap.Revision != revision(t, s) || snap.Prefix != "/t" || snap.Writer != "w" {
		t.Fatalf("snapshot %+v, want the current revision %d", snap, revision(t, s))
	}
	// The walker walks the tree at the snapshot in rounds, at least
	// rounds times, and the writers make one cycle of every kind of change
	// (12 operations) each while each of the first rounds walks: every
	// walk of those runs beside writes, and the writers stop. Writers that
	// ran until the walks were done spun, taking the walker's CPU and
	// growing the history each walk reads.
	const rounds = 5
	ctx := withinDeadline(t)
	turn := make([]chan struct{}, rounds) // closed as the walker begins a walk
	for k := range turn {
		turn[k] = make(chan struct{})
	}
	openTurns := func(upTo int) {
		for k := range min(upTo, rounds) {
			select {
			case <-turn[k]:
			default:
				close(turn[k])
			}
		}
	}
	var writing, wg sync.WaitGroup
	writersDone := make(chan struct{})
	errs := make(chan error, writers+1)
	for w := range writers {
		writing.Go(func() {
			for i := 0; i < rounds*12; i++ {
				if i%12 == 0 {
					<-turn[i/12]
				}
				p := fmt.Sprintf("/t/d%d/f%d", (w+i)%dirs, i%files)
				var err error
				switch i % 4 {
				case 0, 1:
					_, err = s.Put(ctx, store.PutRequest{Path: p, Data: content(64+i%7, byte(w*31+i))})
				case 2:
					err = s.Remove(ctx, store.RemoveRequest{Path: p})
				case 3:
					switch i % 12 {
					case 3:
						err = s.Remove(ctx, store.RemoveRequest{Path: fmt.Sprintf("/t/d%d", w), Recursive: true})
					case 7:
						_, err = s.Move(ctx, store.MoveRequest{From: fmt.Sprintf("/t/d%d", w), To: fmt.Sprintf("/t/moved%d-%d", w, i)})
					default:
						_, err = s.Put(ctx, store.PutRequest{Path: p + "/new", Data: []byte("n")})
					}
				}
				if err != nil && !errors.Is(err, store.ErrNotExist) && !errors.Is(err, store.ErrConflict) {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	go func() {
		writing.Wait()
		close(writersDone)
	}()
	wg.Go(func() {
		defer openTurns(rounds) // a walk that failed leaves no writer waiting
		for walks := 0; ; walks++ {
			openTurns(walks + 1)
			if err := checkTreeAt(ctx, s, snap, want); err != nil {
				errs <- err
				return
			}
			if walks+1 < rounds {
				continue
			}
			select {
			case <-writersDone:
				return
			default:
			}
		}
	})
	wg.Wait()
	<-writersDone
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := checkTreeAt(ctx, s, snap, want); err != nil {
		t.Fatal(err)
	}
}

func testHoldAndRelease(t *testing.T, open Opener) {
	s := open(t, Config{})
	put(t, s, "/keep/a", content(1000, 1))
	put(t, s, "/keep/b", content(2000, 2))
	put(t, s, "/other", content(4000, 4))
	snap := snapshotOf(t, s, store.SnapshotRequest{Name: "hold", Prefix: "/keep"})
	base := stats(t, s)
	put(t, s, "/keep/a", content(1000, 11))
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/keep/b"}); err != nil {
		t.Fatal(err)
	}
	put(t, s, "/other", content(4000, 44)) // outside the snapshot: not held
	held := stats(t, s)
	if held.Versions != 2 || held.HeldBytes != 3000 || held.Snapshots != 1 || held.StoredBytes != base.StoredBytes+1000 {
		t.Fatalf("stats while held: %+v (before the changes: stored %d)", held, base.StoredBytes)
	}
	if got := readAt(t, s, "/keep/b", snap.Revision); !bytes.Equal(got, content(2000, 2)) {
		t.Fatal("the removed file reads other bytes at the snapshot")
	}
	if err := s.DeleteSnapshot(t.Context(), "hold"); err != nil {
		t.Fatal(err)
	}
	after := stats(t, s)
	if after.Versions != 0 || after.HeldBytes != 0 || after.Snapshots != 0 || after.StoredBytes != held.StoredBytes-3000 {
		t.Fatalf("stats after the release: %+v, want 3000 bytes fewer than %d", after, held.StoredBytes)
	}
	checkStats(t, s)
	if _, err := s.OpenAt(t.Context(), "/keep/b", snap.Revision); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("OpenAt of a released version: %v, want ErrNotExist", err)
	}
}

func testEvictionHolds(t *testing.T, open Opener) {
	s := open(t, Config{MaxStoreBytes: 10_000})
	put(t, s, "/s/a", content(3000, 1))
	put(t, s, "/s/b", content(3000, 2))
	snap := snapshotOf(t, s, store.SnapshotRequest{Name: "pinned-by-snap"})
	// Everything stored is as the snapshot saw it: nothing to evict.
	check := refusal(t, s)
	_, err := s.Put(t.Context(), store.PutRequest{Path: "/big", Data: content(5000, 4)})
	wantErr(t, "a write when only held content is left", err, store.ErrLimit)
	if !strings.Contains(err.Error(), "pinned-by-snap") {
		t.Fatalf("the refusal does not name the snapshot: %v", err)
	}
	check()
	put(t, s, "/c", content(3000, 3))
	// a's first version is held, b too: only c, written after the
	// snapshot, may go.
	res := put(t, s, "/s/a", content(3000, 5))
	if res.Evicted.Count != 1 || res.Evicted.Paths[0] != "/c" {
		t.Fatalf("evicted %+v, want /c alone", res.Evicted)
	}
	wantPresent(t, s, "/s/a", "/s/b")
	if got := readAt(t, s, "/s/a", snap.Revision); !bytes.Equal(got, content(3000, 1)) {
		t.Fatal("the held version reads other bytes")
	}
	if err := s.DeleteSnapshot(t.Context(), "pinned-by-snap"); err != nil {
		t.Fatal(err)
	}
	put(t, s, "/big", content(5000, 4))
	if st := checkStats(t, s); st.StoredBytes > 10_000 || st.Versions != 0 {
		t.Fatalf("after the release: %+v", st)
	}
}

func testHistoryEvicted(t *testing.T, open Opener) {
	s := open(t, Config{MaxStoreBytes: 10_000, KeepVersions: 3})
	put(t, s, "/old", content(1000, 8)) // used longer ago than the history
	for i := range 3 {
		put(t, s, "/h", content(2000, byte(i)))
	}
	put(t, s, "/live", content(1000, 9))
	if st := stats(t, s); st.Versions != 2 || st.HeldBytes != 4000 {
		t.Fatalf("stats with history: %+v", st)
	}
	// 8000 stored; 6000 more evicts the history before any live file,
	// even one used longer ago.
	res := put(t, s, "/new", content(6000, 10))
	if res.Evicted.Bytes != 4000 || res.Evicted.Count != 0 {
		t.Fatalf("evictions %+v, want the two history versions' 4000 bytes and no file", res.Evicted)
	}
	wantPresent(t, s, "/old", "/h", "/live", "/new")
	if st := checkStats(t, s); st.Versions != 0 || st.HeldBytes != 0 {
		t.Fatalf("stats after evicting history: %+v", st)
	}
	if h := history(t, s, "/h"); len(h) != 1 {
		t.Fatalf("history after eviction: %+v", h)
	}
}

func testSnapshotRequests(t *testing.T, open Opener) {
	s := open(t, Config{})
	put(t, s, "/p/f", []byte("f"))
	a := snapshotOf(t, s, store.SnapshotRequest{Name: "b-second"})
	snapshotOf(t, s, store.SnapshotRequest{Name: "a-first", Prefix: "/p", Expires: time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)})
	if a.Prefix != "/" || a.Created.IsZero() {
		t.Fatalf("snapshot %+v: want prefix / and a creation time", a)
	}
	check := refusal(t, s)
	for _, tc := range []struct {
		req  store.SnapshotRequest
		want error
	}{
		{store.SnapshotRequest{Name: "a-first"}, store.ErrExist},
		{store.SnapshotRequest{Name: "a/b"}, fs.ErrInvalid},
		{store.SnapshotRequest{Name: ".."}, fs.ErrInvalid},
		{store.SnapshotRequest{Name: "x", Prefix: "p"}, depotpath.ErrInvalid},
		{store.SnapshotRequest{Name: "x", Prefix: "/missing"}, store.ErrNotExist},
	} {
		if _, err := s.CreateSnapshot(t.Context(), tc.req); !errors.Is(err, tc.want) {
			t.Errorf("CreateSnapshot(%+v): %v, want %v", tc.req, err, tc.want)
		}
	}
	if err := s.DeleteSnapshot(t.Context(), "none"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("DeleteSnapshot of none: %v, want ErrNotExist", err)
	}
	_, err := s.Put(t.Context(), store.PutRequest{Path: store.SnapshotsDir + "/a-first/x", Data: []byte("x")})
	if err == nil {
		t.Errorf("a write under %s succeeded", store.SnapshotsDir)
	}
	check()
	list, err := s.Snapshots(t.Context())
	if err != nil || len(list) != 2 || list[0].Name != "a-first" || list[1].Name != "b-second" || list[0].Prefix != "/p" {
		t.Fatalf("Snapshots: %+v, %v", list, err)
	}
	if st := stats(t, s); st.Snapshots != 2 {
		t.Fatalf("Stats.Snapshots %d, want 2", st.Snapshots)
	}
}

func testSnapshotExpiry(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, Config{Now: clk.Now})
	put(t, s, "/f", content(500, 1))
	snapshotOf(t, s, store.SnapshotRequest{Name: "brief", Expires: clk.Now().Add(time.Minute)})
	put(t, s, "/f", content(500, 2))
	if st := stats(t, s); st.HeldBytes != 500 {
		t.Fatalf("held bytes %d, want 500", st.HeldBytes)
	}
	clk.Advance(2 * time.Minute)
	expireUntil(t, s, "the snapshot", func() bool { return stats(t, s).Snapshots == 0 })
	if st := checkStats(t, s); st.HeldBytes != 0 || st.Versions != 0 {
		t.Fatalf("after the snapshot expired: %+v", st)
	}
}
