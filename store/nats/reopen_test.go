package nats_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestNewHostRevisionAfterRemove: a host opened after the depot's last
// change was a removal reports the revision the other hosts report, and
// a snapshot it takes holds the tree after the removal, not the removed
// file. (The bucket
// keeps only a removed entry's delete marker, for a path the new host
// never saw: that is still the depot's last change.)
func TestNewHostRevisionAfterRemove(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("r%d", depots.Add(1))
	old := openPrefix(t, c, storetest.Config{KeepVersions: 1}, prefix)
	if _, err := old.Put(t.Context(), store.PutRequest{Path: "/gone", Data: []byte("g")}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Put(t.Context(), store.PutRequest{Path: "/keep", Data: []byte("k")}); err != nil {
		t.Fatal(err)
	}
	if err := old.Remove(t.Context(), store.RemoveRequest{Path: "/gone"}); err != nil {
		t.Fatal(err)
	}
	want := revision(t, old)
	fresh := openPrefix(t, c, storetest.Config{KeepVersions: 1}, prefix)
	if got := revision(t, fresh); got != want {
		t.Errorf("a host opened after the removal is at revision %d, the other at %d", got, want)
	}
	snap, err := fresh.CreateSnapshot(t.Context(), store.SnapshotRequest{Name: "after"})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != want {
		t.Errorf("the new host's snapshot holds revision %d, want %d", snap.Revision, want)
	}
	for _, s := range []store.Store{old, fresh} {
		if _, err := s.StatAt(t.Context(), "/gone", snap.Revision); !errors.Is(err, store.ErrNotExist) {
			t.Errorf("the removed file at the snapshot: %v, want ErrNotExist", err)
		}
	}
}

func revision(t *testing.T, s store.Store) uint64 {
	t.Helper()
	rev, err := s.Revision(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// TestPutOnClosingHost: a put racing its host's Close either succeeds,
// and then another host shows it, or fails with store.ErrClosed; never
// with "no quorum" (store.ErrUnavailable) or an unknown outcome: the
// cluster had its quorum all along, and a put the cluster acknowledged
// is known committed even when the host closed before applying it.
func TestPutOnClosingHost(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("r%d", depots.Add(1))
	other := openPrefix(t, c, storetest.Config{}, prefix)
	ok, closedErr := 0, 0
	for i := range 20 {
		host := openPrefix(t, c, storetest.Config{}, prefix)
		p := fmt.Sprintf("/f%d", i)
		errc := make(chan error, 1)
		go func() {
			_, err := host.Put(t.Context(), store.PutRequest{Path: p, Data: []byte(p)})
			errc <- err
		}()
		time.Sleep(time.Duration(i%4) * 500 * time.Microsecond)
		host.Close()
		err := <-errc
		switch {
		case err == nil:
			ok++
			if err := other.(interface{ Sync(context.Context) error }).Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Stat(t.Context(), p); err != nil {
				t.Errorf("put %s succeeded on the closing host; the other host: %v", p, err)
			}
		case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrOutcomeUnknown):
			t.Errorf("put %s on a closing host with quorum: %v, want success or ErrClosed", p, err)
		case errors.Is(err, store.ErrClosed):
			closedErr++
		default:
			t.Errorf("put %s on a closing host: %v", p, err)
		}
	}
	t.Logf("of 20 puts racing Close: %d succeeded, %d failed with ErrClosed", ok, closedErr)
}
