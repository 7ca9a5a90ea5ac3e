package nats_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestSnapshotGroupedAfterPutKeepsHistory: puts and a snapshot creation
// queued behind a commit in flight commit as one group, the snapshot
// after the puts. Keeping 1 version, /f has history v1 and is v2; one
// put writes v3. Whatever order the store gives the two, the history
// must be what the contract keeps: a snapshot at a revision before v3
// holds v2, so v1 is still the one unheld version kept; a snapshot after
// v3 holds v3, and v2 is the one kept. A group that trimmed /f for the
// put before counting the snapshot's hold dropped v1 while the snapshot
// held v2.
func TestSnapshotGroupedAfterPutKeepsHistory(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	for round := range 4 {
		s := openPrefix(t, c, storetest.Config{KeepVersions: 1}, fmt.Sprintf("g%d", depots.Add(1))).(*nats.Store)
		for _, v := range []string{"v1", "v2"} {
			if _, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte(v)}); err != nil {
				t.Fatal(err)
			}
		}
		queued, release := nats.HoldWrites(s)
		errs := make(chan error, 4)
		for i := range 3 {
			go func() {
				_, err := s.Put(t.Context(), store.PutRequest{Path: fmt.Sprintf("/other%d", i), Data: []byte("o")})
				errs <- err
			}()
		}
		go func() {
			_, err := s.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("v3")})
			errs <- err
		}()
		for deadline := time.Now().Add(10 * time.Second); queued() < 4; {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes queued, want 4", queued())
			}
			time.Sleep(time.Millisecond)
		}
		snapc := make(chan store.Snapshot, 1)
		go func() {
			snap, err := s.CreateSnapshot(t.Context(), store.SnapshotRequest{Name: "s"})
			errs <- err
			snapc <- snap
		}()
		for deadline := time.Now().Add(10 * time.Second); queued() < 5; {
			if time.Now().After(deadline) {
				t.Fatalf("%d writes queued, want 5", queued())
			}
			time.Sleep(time.Millisecond)
		}
		release()
		for range 5 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		snap := <-snapc
		hist, err := s.History(t.Context(), "/f")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var v3 uint64
		for _, e := range hist {
			got = append(got, e.SHA256[:8])
			if e.SHA256 == storetest.Sum([]byte("v3")) {
				v3 = e.Revision
			}
		}
		want := []string{"v3", "v2", "v1"} // snapshot before v3: it holds v2
		if snap.Revision >= v3 {
			want = want[:2] // after: it holds v3, v2 is the version kept
		}
		for i := range want {
			want[i] = storetest.Sum([]byte(want[i]))[:8]
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: snapshot at %d, v3 at %d: History(/f) %v, want %v", round, snap.Revision, v3, got, want)
		}
	}
}
