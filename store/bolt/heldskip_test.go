package bolt_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestEvictionPastHeld checks eviction in a full store whose oldest
// content a snapshot holds: each write evicts the least recently used
// content written since the snapshot (the walk past the held content is
// remembered, not wrong), and once the snapshot is deleted the formerly
// held content goes first again.
func TestEvictionPastHeld(t *testing.T) {
	const size, held = 100, 20
	s, _ := openTemp(t, &bolt.Options{MaxStoreBytes: (held + 2) * size})
	put := func(p string, seed int) store.PutResult {
		t.Helper()
		res, err := s.Put(t.Context(), store.PutRequest{Path: p, Data: []byte(fmt.Sprintf("%0*d", size, seed))})
		if err != nil {
			t.Fatalf("Put(%s): %v", p, err)
		}
		return res
	}
	for i := range held {
		put(fmt.Sprintf("/h/f%02d", i), i)
	}
	if _, err := s.CreateSnapshot(t.Context(), store.SnapshotRequest{Name: "s", Prefix: "/h"}); err != nil {
		t.Fatal(err)
	}
	put("/n/a", 1000)
	put("/n/b", 1001)
	for i := range 10 {
		res := put(fmt.Sprintf("/n/c%d", i), 2000+i)
		want := "/n/a"
		switch {
		case i == 1:
			want = "/n/b"
		case i > 1:
			want = fmt.Sprintf("/n/c%d", i-2)
		}
		if !slices.Equal(res.Evicted.Paths, []string{want}) {
			t.Fatalf("write %d evicted %v, want %s: the oldest content written since the snapshot", i, res.Evicted.Paths, want)
		}
	}
	if err := s.DeleteSnapshot(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	if res := put("/n/d", 3000); !slices.Equal(res.Evicted.Paths, []string{"/h/f00"}) {
		t.Fatalf("with the snapshot deleted, a write evicted %v, want /h/f00", res.Evicted.Paths)
	}
	if _, err := s.CreateSnapshot(t.Context(), store.SnapshotRequest{Name: "t", Prefix: "/h"}); err != nil {
		t.Fatal(err)
	}
	if res := put("/n/e", 3001); !slices.Equal(res.Evicted.Paths, []string{"/n/c8"}) {
		t.Fatalf("with a new snapshot of /h, a write evicted %v, want /n/c8", res.Evicted.Paths)
	}
}
