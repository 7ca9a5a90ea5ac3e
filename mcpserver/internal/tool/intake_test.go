package tool

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
	"github.com/depotfs/depotfs/internal/policy"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestIntakeCountsStreamsInFlight: the bytes of streams not yet committed
// count together against the store's size limit, are given back when a
// stream ends, and a stream of unknown size is refused as soon as what it
// brought crosses the room, with nothing stored.
func TestIntakeCountsStreamsInFlight(t *testing.T) {
	const limit = 1 << 20
	st, err := bolt.Open(filepath.Join(t.TempDir(), "depot.db"), &bolt.Options{MaxStoreBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	host, err := policy.NewHost(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newTestRuntime(st, host)
	who := identity.Identity{Transport: "test", Subject: "writer", Grants: []grant.Grant{{Tool: "guide", Prefix: "/", Access: grant.ReadWrite}}}
	call := func() *Call { return s.NewCall(identity.NewContext(ctx, who), "guide_begin_upload", "guide") }

	a, err := call().Store().newIntake(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.take(600 << 10); err != nil {
		t.Fatalf("the first stream: %v", err)
	}
	if room, err := call().Store().Room(ctx); err != nil || room != limit-600<<10 {
		t.Errorf("Room while a stream holds 600 KiB: %d, %v", room, err)
	}
	b, err := call().Store().newIntake(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.take(600 << 10); !errors.Is(err, store.ErrLimit) {
		t.Errorf("a second stream over the room: %v, want store.ErrLimit", err)
	}
	b.done()
	a.done()
	if room, _ := call().Store().Room(ctx); room != limit {
		t.Errorf("Room once both ended: %d, want %d", room, limit)
	}

	big := bytes.Repeat([]byte("x"), 2*limit)
	_, err = call().Store().PutStream(ctx, store.PutRequest{Path: "/big.bin"}, bytes.NewReader(big), -1)
	if !errors.Is(err, store.ErrLimit) {
		t.Errorf("a stream of unknown size over the room: %v, want store.ErrLimit", err)
	}
	if _, err := st.Stat(ctx, "/big.bin"); !errors.Is(err, store.ErrNotExist) {
		t.Errorf("the refused stream stored something: %v", err)
	}
	if s.streaming.Load() != 0 {
		t.Errorf("%d bytes still counted in flight", s.streaming.Load())
	}
}
