package nats_test

import (
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestVersionsAcrossHostsAndRestart: versions and snapshots live in the
// tree bucket, so every host applies them: a snapshot created on one host
// holds what another host's writes replace, and a host opened afresh (a
// restart: its state rebuilt from the stream) shows the same histories,
// snapshots, held bytes and trees at the snapshot.
func TestVersionsAcrossHostsAndRestart(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("t%d", depots.Add(1))
	cfg := storetest.Config{KeepVersions: 2}
	a := openPrefix(t, c, cfg, prefix).(*nats.Store)
	b := openPrefix(t, c, cfg, prefix).(*nats.Store)
	ctx := t.Context()
	put := func(s store.Store, p, data string) {
		t.Helper()
		if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	put(a, "/d/f", "one")
	put(a, "/d/f", "two")
	put(a, "/d/g", "gone soon")
	snap, err := a.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s", Prefix: "/d"})
	if err != nil {
		t.Fatal(err)
	}
	if list, err := b.Snapshots(ctx); err != nil || len(list) != 1 || list[0] != snap {
		t.Fatalf("another host lists %+v, %v; want %+v", list, err, snap)
	}
	put(b, "/d/f", "three")
	if err := b.Remove(ctx, store.RemoveRequest{Path: "/d/g"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	readAt := func(s store.Store, p string) string {
		t.Helper()
		ct, err := s.OpenAt(ctx, p, snap.Revision)
		if err != nil {
			t.Fatalf("OpenAt(%s, %d): %v", p, snap.Revision, err)
		}
		defer ct.Close()
		b, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if f, g := readAt(a, "/d/f"), readAt(a, "/d/g"); f != "two" || g != "gone soon" {
		t.Fatalf("at the snapshot, from the host that took it: %q, %q", f, g)
	}
	restarted := openPrefix(t, c, cfg, prefix)
	if err := restarted.(*nats.Store).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/d/f", "/d/g"} {
		ha, err := a.History(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		hr, err := restarted.History(ctx, p)
		if err != nil || !slices.Equal(ha, hr) {
			t.Fatalf("history of %s after a restart: %+v, %v; before: %+v", p, hr, err, ha)
		}
	}
	if f := readAt(restarted, "/d/f"); f != "two" {
		t.Fatalf("at the snapshot after a restart: %q", f)
	}
	sa, _ := a.Stats(ctx)
	sr, _ := restarted.Stats(ctx)
	if sr.Versions != sa.Versions || sr.HeldBytes != sa.HeldBytes || sr.Snapshots != 1 || sa.Versions != 3 {
		t.Fatalf("stats after a restart %+v, before %+v", sr, sa)
	}
	if err := restarted.DeleteSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if list, _ := a.Snapshots(ctx); len(list) != 0 {
		t.Fatalf("snapshots after another host deleted it: %+v", list)
	}
	if h, err := a.History(ctx, "/d/f"); err != nil || len(h) != 3 {
		t.Fatalf("history after the release: %+v, %v; want the live file and its 2 kept versions", h, err)
	}
}

// TestSnapshotReleaseInSeveralCommits: a snapshot holding more versions
// than one batch holds is released in several commits, and deleted with
// the last of them, however small the batch: a commit refused as too
// large is tried again with fewer versions.
func TestSnapshotReleaseInSeveralCommits(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	for _, batch := range []int{40, 12, 10} {
		t.Run(fmt.Sprint(batch), func(t *testing.T) {
			s := openWith(t, c, storetest.Config{}, fmt.Sprintf("t%d", depots.Add(1)), nats.Options{MaxBatch: batch})
			ctx := t.Context()
			const files = 60
			for round := range 2 {
				for i := range files {
					if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i), Data: []byte(fmt.Sprint(round, i))}); err != nil {
						t.Fatal(err)
					}
				}
				if round == 0 {
					if _, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "big"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if st, _ := s.Stats(ctx); st.Versions != files {
				t.Fatalf("%d versions held, want %d", st.Versions, files)
			}
			if err := s.DeleteSnapshot(ctx, "big"); err != nil {
				t.Fatal(err)
			}
			st, _ := s.Stats(ctx)
			if list, _ := s.Snapshots(ctx); len(list) != 0 || st.Versions != 0 || st.HeldBytes != 0 {
				t.Fatalf("after the release: snapshots %+v, stats %+v", list, st)
			}
		})
	}
}

// TestSnapshotGoneAtDeletionStart: a snapshot whose release takes
// several commits is gone from every host's listing from the first of
// them (from then on it holds nothing new, and its tree loses files as
// the release goes), not once the release is done.
func TestSnapshotGoneAtDeletionStart(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("t%d", depots.Add(1))
	a := openWith(t, c, storetest.Config{}, prefix, nats.Options{MaxBatch: 12})
	b := openWith(t, c, storetest.Config{}, prefix, nats.Options{MaxBatch: 12})
	ctx := t.Context()
	const files = 80
	for round := range 2 {
		for i := range files {
			if _, err := a.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i), Data: []byte(fmt.Sprint(round, i))}); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 {
			if _, err := a.CreateSnapshot(ctx, store.SnapshotRequest{Name: "big"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// b has applied every write before the deletion starts: from then
	// on, fewer versions on b means the release is under way.
	if err := b.(*nats.Store).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := b.Stats(ctx); err != nil || st.Versions != files {
		t.Fatalf("before the deletion another host has %+v, %v; want %d versions", st, err, files)
	}
	done := make(chan error, 1)
	go func() { done <- a.DeleteSnapshot(ctx, "big") }()
	seenPartial := false
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if !seenPartial {
				t.Log("the release ended before another host saw it part done")
			}
			return
		default:
		}
		st, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		list, err := b.Snapshots(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Stats first, then the listing: a release under way by then is
		// under way when the listing is read.
		if st.Versions < files && st.Versions > 0 {
			seenPartial = true
			if len(list) != 0 {
				t.Fatalf("with %d of %d versions released, another host still lists %+v", files-st.Versions, files, list)
			}
		}
	}
}
