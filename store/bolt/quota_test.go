package bolt_test

import (
	"slices"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// TestQuotaCountedAtOpen: what a prefix is charged is counted again at
// open, from live files, held versions and uploads in progress, for
// whatever quotas this open configures, and equals what the writes kept.
func TestQuotaCountedAtOpen(t *testing.T) {
	opts := &bolt.Options{KeepVersions: 2, Quotas: []store.Quota{{Prefix: "/a", Bytes: 1 << 20}}}
	s, path := openTemp(t, opts)
	ctx := t.Context()
	for _, req := range []store.PutRequest{
		{Path: "/a/one", Data: make([]byte, 100)},
		{Path: "/a/sub/two", Data: []byte("two"), Pinned: true},
		{Path: "/b/three", Data: make([]byte, 1000)},
	} {
		if _, err := s.Put(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s", Prefix: "/a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, store.PutRequest{Path: "/a/one", Data: make([]byte, 10)}); err != nil { // the snapshot holds the 100
		t.Fatal(err)
	}
	if _, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Count: 2, Data: make([]byte, 7),
		File: store.PutRequest{Path: "/a/up", SHA256: "0000000000000000000000000000000000000000000000000000000000000000"}}); err != nil {
		t.Fatal(err)
	}
	want := []store.QuotaUse{{Prefix: "/a", Limit: 1 << 20, Charged: 100 + 3 + 10 + 7}}
	before, err := s.Quotas(ctx)
	if err != nil || !slices.Equal(before, want) {
		t.Fatalf("Quotas = %+v, %v; want %+v", before, err, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	opts.Quotas = append(opts.Quotas, store.Quota{Prefix: "/", Bytes: 1 << 30})
	s = openAt(t, path, opts)
	want = []store.QuotaUse{{Prefix: "/", Limit: 1 << 30, Charged: 1120}, want[0]}
	if got, err := s.Quotas(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("Quotas after reopening with a quota on /: %+v, %v; want %+v", got, err, want)
	}
}

func TestQuotaOptionsChecked(t *testing.T) {
	for _, qs := range [][]store.Quota{
		{{Prefix: "a", Bytes: 1}},
		{{Prefix: "/a/", Bytes: 1}},
		{{Prefix: "/a", Bytes: 0}},
		{{Prefix: "/a", Bytes: 1}, {Prefix: "/a", Bytes: 2}},
	} {
		if s, err := bolt.Open(t.TempDir()+"/db", &bolt.Options{Quotas: qs}); err == nil {
			s.Close()
			t.Errorf("Open with quotas %+v succeeded", qs)
		}
	}
}
