package nats_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDepotIdentity: a host that served a depot refuses a cluster that
// holds none under its prefix (its servers lost their storage, or another
// cluster answers on the same address) without creating anything there,
// and refuses one holding another depot; a host that never served one
// joins an existing depot; Create makes a new depot where there is none.
func TestDepotIdentity(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("id%d", depots.Add(1))
	open := func(o nats.Options) (*nats.Store, error) {
		o.Prefix = prefix
		s, err := nats.Open(t.Context(), c.Connect(t), &o)
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
	first, err := open(nats.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := first.Depot()
	if id == "" {
		t.Fatal("a new depot has no id")
	}
	if _, err := first.Put(t.Context(), store.PutRequest{Path: "/kept.txt", Data: []byte("kept\n")}); err != nil {
		t.Fatal(err)
	}
	joined, err := open(nats.Options{})
	if err != nil || joined.Depot() != id {
		t.Fatalf("a host with no record of a depot joining it: %v, depot %q, want %q", err, joined.Depot(), id)
	}
	again, err := open(nats.Options{Depot: id})
	if err != nil || again.Depot() != id {
		t.Fatalf("reopening the depot served: %v", err)
	}
	if _, err := again.Stat(t.Context(), "/kept.txt"); err != nil {
		t.Fatalf("the depot served: %v", err)
	}

	// The cluster loses the depot.
	for _, h := range []*nats.Store{first, joined, again} {
		h.Close()
	}
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"KV_" + prefix + "-tree", prefix + "-chunks", "KV_" + prefix + "-settings"} {
		if err := js.DeleteStream(t.Context(), name); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatal(err)
		}
	}
	if _, err := open(nats.Options{Depot: id}); !errors.Is(err, nats.ErrNoDepot) {
		t.Fatalf("a cluster without the depot served: %v, want ErrNoDepot", err)
	}
	// The cluster is shared: the depot's streams are the ones named by
	// its prefix.
	for name := range js.StreamNames(t.Context()).Name() {
		if strings.Contains(name, prefix+"-") {
			t.Errorf("the refused open created stream %s", name)
		}
	}
	if _, err := open(nats.Options{Create: nats.CreateNever}); !errors.Is(err, nats.ErrNoDepot) {
		t.Fatalf("CreateNever on a cluster without a depot: %v, want ErrNoDepot", err)
	}

	// Create makes a new, empty depot with another id...
	created, err := open(nats.Options{Depot: id, Create: nats.CreateAlways})
	if err != nil {
		t.Fatal(err)
	}
	newID := created.Depot()
	if newID == "" || newID == id {
		t.Fatalf("the created depot's id %q (the old one %q)", newID, id)
	}
	if _, err := created.Stat(t.Context(), "/kept.txt"); !errors.Is(err, store.ErrNotExist) {
		t.Fatalf("the new depot holds the old one's file: %v", err)
	}
	// ...which a host that served the first one refuses, Create or not.
	for _, mode := range []nats.CreateMode{nats.CreateFirst, nats.CreateAlways} {
		if _, err := open(nats.Options{Depot: id, Create: mode}); !errors.Is(err, nats.ErrOtherDepot) {
			t.Errorf("create mode %d, a cluster holding another depot: %v, want ErrOtherDepot", mode, err)
		}
	}
	if joined, err := open(nats.Options{}); err != nil || joined.Depot() != newID {
		t.Errorf("a host with no record joining the new depot: %v", err)
	}
}
