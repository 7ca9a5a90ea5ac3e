package nats

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// logOf returns change records as a host reads them at open: records
// first..last of size events each, the first after revision prev, stored
// in slots of history (so the oldest are replaced), in stream order.
func logOf(t *testing.T, first, last uint64, size int, prev uint64) ([]rawChanges, []store.Event) {
	t.Helper()
	var recs []rawChanges
	var all []store.Event
	rev := prev
	for n := first; n <= last; n++ {
		r := changeRecord{N: n, Prev: rev}
		for range size {
			rev++
			r.Events = append(r.Events, store.Event{Kind: store.EventCreated, Path: "/f", Revision: rev})
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := changeNumber("c.x", data)
		if err != nil || got != n {
			t.Fatalf("changeNumber of record %d = %d, %v", n, got, err)
		}
		recs = append(recs, rawChanges{n: n, key: "c.x", data: data})
		all = append(all, r.Events...)
	}
	return recs, all
}

// TestReplayedDecodesOnlyWhatTheHubKeeps checks that filling a hub from
// the newest records gives the events and the starting revision decoding
// the whole log gave: every event after from, the newest ones whole.
func TestReplayedDecodesOnlyWhatTheHubKeeps(t *testing.T) {
	recs, all := logOf(t, 10, 29, 5, 1000) // revisions 1001..1100
	slices.Reverse(recs)                   // any order
	for _, capacity := range []int{1, 5, 7, 100, 1000} {
		from, evs := replayed(slices.Clone(recs), 1100, capacity, addresses{})
		if len(evs) < min(capacity, len(all)) {
			t.Fatalf("capacity %d: %d events, fewer than the hub keeps", capacity, len(evs))
		}
		want := all[len(all)-len(evs):]
		if !slices.Equal(evs, want) {
			t.Fatalf("capacity %d: events %v, want the newest %d: %v", capacity, evs, len(want), want)
		}
		if wantFrom := want[0].Revision - 1; from != wantFrom {
			t.Fatalf("capacity %d: from %d, want %d", capacity, from, wantFrom)
		}
	}
	// Only the newest consecutive run counts.
	gap, _ := logOf(t, 1, 3, 5, 900)
	from, evs := replayed(append(gap, recs...), 1100, 1000, addresses{})
	if from != 1000 || len(evs) != 100 {
		t.Fatalf("after a gap: from %d with %d events, want 1000 with 100", from, len(evs))
	}
	// Entries changed after the newest record: nothing to replay.
	if from, evs := replayed(slices.Clone(recs), 1101, 1000, addresses{}); from != 1101 || evs != nil {
		t.Fatalf("log behind the store: from %d with %d events, want 1101 with none", from, len(evs))
	}
	if from, evs := replayed(nil, 7, 1000, addresses{}); from != 7 || len(evs) != 0 {
		t.Fatalf("no log: from %d with %d events, want 7 with none", from, len(evs))
	}
	// A record that does not decode ends the run.
	broken := slices.Clone(recs)
	broken[len(broken)-3].data = []byte(`{"n":12,"prev":`)
	from, evs = replayed(broken, 1100, 1000, addresses{})
	if from != 1015 || len(evs) != 85 {
		t.Fatalf("a broken record: from %d with %d events, want 1015 with 85", from, len(evs))
	}
}

// TestChangeNumberRefusesWhatIsNoRecord checks the number is read only
// from a change record.
func TestChangeNumberRefusesWhatIsNoRecord(t *testing.T) {
	for _, data := range []string{``, `[]`, `{"prev":3}`, `{"n":"x"}`, `{"ev":[`, `{"n":-1}`} {
		if n, err := changeNumber("c.1", []byte(data)); err == nil {
			t.Errorf("changeNumber(%q) = %d, want an error", data, n)
		}
	}
	if n, err := changeNumber("c.1", []byte(`{"prev":3,"ev":[{"k":"x"}],"n":42}`)); err != nil || n != 42 {
		t.Errorf("fields in another order: %d, %v; want 42", n, err)
	}
}
