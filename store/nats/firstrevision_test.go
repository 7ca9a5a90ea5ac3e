package nats_test

import (
	"errors"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestFirstRevision: a depot created with Options.FirstRevision hands out
// revisions above it from its first write, answers nothing at a revision
// below it, and another opener binds it as it is (its own FirstRevision
// changes nothing); a depot created without one starts low.
func TestFirstRevision(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	const floor = 5_000_000_000
	a := openWith(t, c, storetest.Config{}, "first", nats.Options{FirstRevision: floor})
	res, err := a.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("after the restore")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entry.Revision <= floor {
		t.Errorf("first write's revision %d, want above %d", res.Entry.Revision, floor)
	}
	if rev, err := a.Revision(t.Context()); err != nil || rev < res.Entry.Revision {
		t.Errorf("Revision after the write: %d, %v; want at least %d", rev, err, res.Entry.Revision)
	}
	if _, err := a.StatAt(t.Context(), "/f", 5); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("StatAt revision 5, below the first one: %v, want not found", err)
	}

	b := openWith(t, c, storetest.Config{}, "first", nats.Options{FirstRevision: 7})
	if e, err := b.Stat(t.Context(), "/f"); err != nil || e.Revision != res.Entry.Revision {
		t.Fatalf("another opener's Stat: %+v, %v; want revision %d", e, err, res.Entry.Revision)
	}
	res2, err := b.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("again")})
	if err != nil || res2.Entry.Revision <= res.Entry.Revision {
		t.Errorf("the other opener's write: revision %d, %v; want above %d", res2.Entry.Revision, err, res.Entry.Revision)
	}

	plain := openWith(t, c, storetest.Config{}, "plain", nats.Options{})
	res3, err := plain.Put(t.Context(), store.PutRequest{Path: "/f", Data: []byte("x")})
	if err != nil || res3.Entry.Revision >= 1000 {
		t.Errorf("a depot created without FirstRevision: first write's revision %d, %v; want a small one", res3.Entry.Revision, err)
	}
}
