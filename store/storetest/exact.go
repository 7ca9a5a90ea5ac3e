package storetest

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// soakRounds is n, or 10 × n with DEPOTFS_SOAK set: the rounds of a test
// that looks for a race by repeating it.
func soakRounds(n int) int {
	if os.Getenv("DEPOTFS_SOAK") != "" {
		return 10 * n
	}
	return n
}

// testSnapshotInGroup checks that a snapshot created while writers
// replace files holds every file of its prefix, as its revision saw it,
// when it shares a commit with some of those writes (a store that
// commits concurrent calls together: it is created after them in the
// commit but numbered before them). Ten rounds: the writers and the
// snapshot start together, so most rounds share a commit; with 30 the
// subtest cost 17 s of a sealed store's suite under -race.
func testSnapshotInGroup(t *testing.T, open Opener) {
	s := open(t, Config{})
	const files = 6
	rounds := soakRounds(10)
	ctx := withinDeadline(t)
	for round := range rounds {
		dir := fmt.Sprintf("/g%d", round)
		for f := range files {
			put(t, s, fmt.Sprintf("%s/f%d", dir, f), content(40+f, byte(round)))
		}
		start := make(chan struct{})
		var wg sync.WaitGroup
		var snap store.Snapshot
		var snapErr error
		errs := make([]error, files)
		for f := range files {
			wg.Go(func() {
				<-start
				_, errs[f] = s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("%s/f%d", dir, f), Data: content(50+f, byte(round))})
			})
		}
		wg.Go(func() {
			<-start
			snap, snapErr = s.CreateSnapshot(ctx, store.SnapshotRequest{Name: fmt.Sprintf("s%d", round), Prefix: dir})
		})
		close(start)
		wg.Wait()
		for _, err := range append(errs, snapErr) {
			if err != nil {
				t.Fatal(err)
			}
		}
		got, err := treeAt(ctx, s, snap.Revision, dir)
		if err != nil {
			t.Fatalf("round %d: walking the snapshot at %d: %v", round, snap.Revision, err)
		}
		for f := range files {
			p := fmt.Sprintf("%s/f%d", dir, f)
			old, next := "file "+Sum(content(40+f, byte(round))), "file "+Sum(content(50+f, byte(round)))
			if got[p] != old && got[p] != next {
				t.Fatalf("round %d: the snapshot at %d shows %s as %q, want its content before or after the write that shared its commit", round, snap.Revision, p, got[p])
			}
			if e, err := s.StatAt(ctx, p, snap.Revision); err != nil || "file "+e.SHA256 != got[p] {
				t.Fatalf("round %d: StatAt(%s, %d) = %+v, %v; the walk showed %q", round, p, snap.Revision, e, err, got[p])
			}
		}
	}
	for round := range rounds {
		if err := s.DeleteSnapshot(ctx, fmt.Sprintf("s%d", round)); err != nil {
			t.Fatal(err)
		}
	}
	if st := checkStats(t, s); st.Versions != 0 || st.HeldBytes != 0 {
		t.Fatalf("with every snapshot deleted: %+v", st)
	}
}

// testGroupWrites checks that concurrent writes of one path, which a
// store may commit together, each answer with the revision of their own
// record, and that the path's history holds each of them, as it would
// had they been committed one by one: the stores keep the same history
// for the same writes, however they group them.
func testGroupWrites(t *testing.T, open Opener) {
	const writers = 6
	s := open(t, Config{KeepVersions: writers * soakRounds(8)})
	ctx := withinDeadline(t)
	put(t, s, "/w/f", []byte("first"))
	var all []store.PutResult
	for round := range soakRounds(8) {
		res := make([]store.PutResult, writers)
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				<-start
				res[w], errs[w] = s.Put(ctx, store.PutRequest{Path: "/w/f", Data: content(30+w, byte(round))})
			})
		}
		close(start)
		wg.Wait()
		for w, err := range errs {
			if err != nil {
				t.Fatalf("round %d writer %d: %v", round, w, err)
			}
			if r := res[w].Entry; r.Revision == 0 || r.SHA256 != Sum(content(30+w, byte(round))) {
				t.Fatalf("round %d writer %d answered %+v: want its own content at a revision", round, w, r)
			}
		}
		all = append(all, res...)
	}
	slices.SortFunc(all, func(a, b store.PutResult) int { return int(b.Entry.Revision) - int(a.Entry.Revision) })
	h := history(t, s, "/w/f")
	if len(h) != len(all)+1 {
		t.Fatalf("history of %d entries after %d writes and the first, want every write", len(h), len(all))
	}
	for i, r := range all {
		if i > 0 && r.Entry.Revision == all[i-1].Entry.Revision {
			t.Fatalf("two writes answered revision %d", r.Entry.Revision)
		}
		if h[i].Revision != r.Entry.Revision || h[i].SHA256 != r.Entry.SHA256 {
			t.Fatalf("history[%d] = revision %d sha %s, want the write answered with %d", i, h[i].Revision, h[i].SHA256, r.Entry.Revision)
		}
		if got := readAt(t, s, "/w/f", r.Entry.Revision); Sum(got) != r.Entry.SHA256 {
			t.Fatalf("OpenAt(/w/f, %d) reads other bytes than the write answered with it", r.Entry.Revision)
		}
	}
	if st := stats(t, s); st.Versions != int64(len(all)) {
		t.Fatalf("Stats.Versions %d, want %d", st.Versions, len(all))
	}
}

// testBatchTwice checks a batch that writes one path twice: every reader
// sees a batch whole, so the earlier request's record was never the
// tree at any revision and is no version (in every store, whatever its
// history keeps), and its result names the record the batch left there.
func testBatchTwice(t *testing.T, open Opener) {
	s := open(t, Config{KeepVersions: 3})
	put(t, s, "/b/f", []byte("before"))
	res, err := s.PutBatch(t.Context(), []store.PutRequest{
		{Path: "/b/f", Data: []byte("first")},
		{Path: "/b/other", Data: []byte("other")},
		{Path: "/b/f", Data: []byte("second")},
	})
	if err != nil {
		t.Fatal(err)
	}
	last := res[2].Entry
	if res[0].Status != store.StatusUpdated || res[2].Status != store.StatusUpdated || res[0].Entry != last || last.Revision == 0 {
		t.Fatalf("results %+v and %+v: want both updated, the first naming the entry the batch left", res[0], res[2])
	}
	h := history(t, s, "/b/f")
	if len(h) != 2 || h[0].Revision != last.Revision || string(readAt(t, s, "/b/f", h[1].Revision)) != "before" {
		t.Fatalf("history %+v: want the batch's record and the one before it, not the batch's intermediate", h)
	}
	if got := read(t, s, "/b/f"); !bytes.Equal(got, []byte("second")) {
		t.Fatalf("/b/f reads %q", got)
	}
	if st := stats(t, s); st.Versions != 1 {
		t.Fatalf("Stats.Versions %d, want 1", st.Versions)
	}
}

// testExpiredUnlisted checks that a snapshot is gone from the listing
// the instant it expires by the store's clock, before the sweep releases
// it (from then on it holds nothing new), and that its name can be taken
// again at once: the new snapshot holds its own revision, and the old
// one's versions are released.
func testExpiredUnlisted(t *testing.T, open Opener) {
	clk := newClock()
	s := open(t, Config{Now: clk.Now})
	put(t, s, "/e/f", []byte("old"))
	snapshotOf(t, s, store.SnapshotRequest{Name: "brief", Expires: clk.Now().Add(time.Minute)})
	snapshotOf(t, s, store.SnapshotRequest{Name: "kept"})
	put(t, s, "/e/f", []byte("new"))
	clk.Advance(time.Minute)
	list, err := s.Snapshots(t.Context())
	if err != nil || len(list) != 1 || list[0].Name != "kept" {
		t.Fatalf("Snapshots at the instant brief expires: %+v, %v; want kept alone", list, err)
	}
	again := snapshotOf(t, s, store.SnapshotRequest{Name: "brief"})
	if got := readAt(t, s, "/e/f", again.Revision); string(got) != "new" {
		t.Fatalf("the snapshot taken again under an expired name reads %q", got)
	}
	if err := s.DeleteSnapshot(t.Context(), "kept"); err != nil {
		t.Fatal(err)
	}
	if list, err := s.Snapshots(t.Context()); err != nil || len(list) != 1 || list[0].Name != "brief" {
		t.Fatalf("Snapshots after deleting kept: %+v, %v", list, err)
	}
	if st := stats(t, s); st.Versions != 0 || st.HeldBytes != 0 || st.Snapshots != 1 {
		t.Fatalf("with only the new brief left: %+v, want no version held", st)
	}
}

// DepotOpener creates one new, empty depot and returns open, which opens
// it with cfg as a new Store value each time it is called, registering
// its Close with t.Cleanup. A store one process holds at a time (bolt)
// closes the value open returned before; others keep it open (another
// host of the depot).
type DepotOpener func(t *testing.T) (open func(cfg Config) store.Store)

// RunReopen runs the part of the suite that opens one depot again with
// other settings (KeepVersions lowered) or the same (the change log).
func RunReopen(t *testing.T, depot DepotOpener) {
	t.Run("KeepVersionsLowered", func(t *testing.T) { testKeepLowered(t, depot) })
	t.Run("ChangesReopen", func(t *testing.T) { testChangesReopen(t, depot) })
}

// testKeepLowered checks that lowering KeepVersions takes effect at a
// path's next change: the versions it had kept beyond the new number go,
// content and all, and a version read at their revisions finds nothing.
func testKeepLowered(t *testing.T, depot DepotOpener) {
	open := depot(t)
	s := open(Config{KeepVersions: 3})
	var revs []uint64
	for i := range 4 {
		revs = append(revs, put(t, s, "/k/f", content(200+i, byte(i))).Entry.Revision)
		put(t, s, "/k/g", content(300+i, byte(i)))
	}
	if h := history(t, s, "/k/f"); len(h) != 4 {
		t.Fatalf("history of %d entries with KeepVersions 3, want 4", len(h))
	}
	// A removed file's history, kept beyond the number that follows:
	// writing the path again is its next change too.
	put(t, s, "/k/r", content(400, 1))
	put(t, s, "/k/r", content(401, 2))
	if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/k/r"}); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []int{1, 0} {
		s = open(Config{KeepVersions: keep})
		syncStore(t, s)
		last := put(t, s, "/k/f", content(210+keep, 9)).Entry
		h := history(t, s, "/k/f")
		if len(h) != 1+keep || h[0].Revision != last.Revision {
			t.Fatalf("KeepVersions %d: history of %d entries after the next write, want %d: %+v", keep, len(h), 1+keep, h)
		}
		if keep == 0 {
			again := put(t, s, "/k/r", content(402, 3)).Entry
			if h := history(t, s, "/k/r"); len(h) != 1 || h[0].Revision != again.Revision {
				t.Fatalf("KeepVersions 0: a removed file written again lists %d versions, want itself alone: %+v", len(h), h)
			}
		}
		if keep == 0 {
			for _, rev := range revs {
				if _, err := s.StatAt(t.Context(), "/k/f", rev); err == nil {
					t.Fatalf("KeepVersions 0: the version written at %d is still readable", rev)
				}
			}
		}
	}
	if st := stats(t, s); st.Versions != 3 {
		t.Fatalf("Stats.Versions %d, want the 3 of /k/g that no write trimmed yet", st.Versions)
	}
}
