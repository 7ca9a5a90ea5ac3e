package fetch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/fetch"
)

// pendingPaths returns the paths of the broker's pending requests.
func pendingPaths(b *fetch.Broker) []string {
	var paths []string
	for _, r := range b.Pending().Requests {
		paths = append(paths, r.Path)
	}
	slices.Sort(paths)
	return paths
}

// TestFetchAsksForTheDirectory checks that the first request for a
// placeholder asks for every other placeholder of its directory in the
// same change of the pending set (one reply lists them all), and nothing
// beyond the directory; the held siblings stay without readers until
// answered.
func TestFetchAsksForTheDirectory(t *testing.T) {
	st := newStore(t)
	b := newBroker(t, st, time.Minute)
	for i := range 3 {
		declare(t, st, fmt.Sprintf("/d/p%d", i), 1)
	}
	declare(t, st, "/d/sub/deeper", 1)
	declare(t, st, "/other/p", 1)
	put(t, st, "/d/stored", "s")

	before := b.Pending()
	out := fetchAsync(context.Background(), b, "/d/p1")
	<-before.Changed
	if got, want := pendingPaths(b), []string{"/d/p0", "/d/p1", "/d/p2"}; !slices.Equal(got, want) {
		t.Fatalf("at the first change of the pending set: %v, want %v", got, want)
	}
	waitPending(t, b, 3, 1)
	for i := range 3 {
		put(t, st, fmt.Sprintf("/d/p%d", i), "x")
	}
	if res := <-out; res.err != nil || res.data != "x" {
		t.Errorf("reader: %q, %v", res.data, res.err)
	}
	waitPending(t, b, 0, 0)
	if s := b.Stats(); s.Requested != 3 || s.Fetched != 3 {
		t.Errorf("stats %+v, want 3 requested and fetched", s)
	}
}

// TestWantHoldsWithoutReader checks Want (an O_NONBLOCK open): it asks
// without waiting, the request stays for the timeout with no reader, a
// reader that comes joins it, and it is withdrawn when the hold ends.
func TestWantHoldsWithoutReader(t *testing.T) {
	st := newStore(t)
	const timeout = 300 * time.Millisecond
	b := newBroker(t, st, timeout)
	declare(t, st, "/w/p", 1)
	put(t, st, "/w/stored", "s")
	for _, tc := range []struct {
		path    string
		pending int
	}{
		{"/w/stored", 0}, // present: nothing to ask
		{"/w/p", 1},
	} {
		if err := b.Want(context.Background(), tc.path); err != nil {
			t.Fatalf("Want(%s): %v", tc.path, err)
		}
		if s := b.Stats(); s.Pending != tc.pending || s.Waiting != 0 {
			t.Errorf("after Want(%s): %+v, want %d pending and no reader", tc.path, s, tc.pending)
		}
	}
	if err := b.Want(context.Background(), "/w/missing"); err == nil {
		t.Error("Want of a path with no entry succeeded")
	}
	// The hold ends at the timeout: the request is withdrawn.
	waitPending(t, b, 0, 0)
	if s := b.Stats(); s.Withdrawn != 1 || s.Requested != 1 {
		t.Errorf("after the hold: %+v, want 1 requested and withdrawn", s)
	}
	// Wanted again, then answered.
	if err := b.Want(context.Background(), "/w/p"); err != nil {
		t.Fatal(err)
	}
	put(t, st, "/w/p", "x")
	waitPending(t, b, 0, 0)
	if s := b.Stats(); s.Fetched != 1 {
		t.Errorf("after the answer: %+v, want 1 fetched", s)
	}
}
