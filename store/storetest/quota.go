package storetest

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// testQuota checks what a quota charges (live content per reference,
// snapshot-held versions, staged uploads; not unheld history), that a
// write taking its prefix over is refused with a *store.QuotaError and
// changes nothing, and that other prefixes and releases are never refused.
func testQuota(t *testing.T, open Opener) {
	s := open(t, Config{KeepVersions: 1, Quotas: []store.Quota{{Prefix: "/a", Bytes: 300}}})
	q, ok := s.(store.Quotas)
	if !ok {
		t.Skip("the store keeps no quotas")
	}
	ctx := t.Context()
	charged := func(want int64) {
		t.Helper()
		us, err := q.Quotas(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(us) != 1 || us[0] != (store.QuotaUse{Prefix: "/a", Limit: 300, Charged: want}) {
			t.Fatalf("Quotas = %+v, want /a charged %d of 300", us, want)
		}
	}
	refused := func(what string, err error, charged int64) {
		t.Helper()
		var qe *store.QuotaError
		if !errors.As(err, &qe) || !errors.Is(err, store.ErrLimit) || qe.Prefix != "/a" || qe.Limit != 300 || qe.Charged != charged {
			t.Fatalf("%s: %v, want a QuotaError of /a charged %d of 300", what, err, charged)
		}
	}
	absent := func(p string) {
		t.Helper()
		if _, err := s.Stat(ctx, p); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat(%s) after a refused write: %v, want not found", p, err)
		}
	}
	charged(0)
	put(t, s, "/a/x", content(100, 1))
	putReq(t, s, store.PutRequest{Path: "/a/y", Data: content(100, 2), Pinned: true})
	if _, err := s.Copy(ctx, store.CopyRequest{From: "/a/x", To: "/a/z"}); err != nil {
		t.Fatal(err)
	}
	charged(300) // the copy counts whole: deduplication is no discount
	_, err := s.Put(ctx, store.PutRequest{Path: "/a/w", Data: content(1, 3)})
	refused("a write over the quota", err, 300)
	absent("/a/w")
	put(t, s, "/b/big", content(1000, 4)) // no quota there
	_, err = s.Move(ctx, store.MoveRequest{From: "/b/big", To: "/a/big"})
	refused("a move into the prefix", err, 300)
	absent("/a/big")
	stat(t, s, "/b/big")

	if _, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s", Prefix: "/a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/a/x"}); err != nil {
		t.Fatal(err)
	}
	charged(300) // the snapshot holds /a/x's content
	_, err = s.Put(ctx, store.PutRequest{Path: "/a/w", Data: content(1, 3)})
	refused("a write while a snapshot holds the rest", err, 300)
	if err := s.DeleteSnapshot(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	charged(200) // history nothing holds is not charged
	put(t, s, "/a/w", content(50, 5))
	charged(250)

	file := store.PutRequest{Path: "/a/up", SHA256: Sum(content(80, 6))}
	parts := split(content(80, 6), 4)
	if _, err := s.PutChunk(ctx, chunk("u", parts, 0, file)); err != nil {
		t.Fatal(err)
	}
	charged(270)
	if _, err := s.PutChunk(ctx, chunk("u", parts, 1, file)); err != nil {
		t.Fatal(err)
	}
	charged(290)
	_, err = s.PutChunk(ctx, chunk("u", parts, 2, file))
	refused("a chunk over the quota", err, 290)
	charged(290)
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/a/y"}); err != nil {
		t.Fatal(err)
	}
	charged(190)
}
