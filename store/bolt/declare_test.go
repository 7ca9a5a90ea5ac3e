package bolt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestDeclareCounts pins down the counts the contract leaves to the
// implementation.
func TestDeclareCounts(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, nil)
	mustPut(t, s, "/implicit/f", []byte("x"))
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/p", Kind: store.KindFile, Size: 5}}}); err != nil {
		t.Fatal(err)
	}
	rev, _ := s.Revision(ctx)
	res, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
		{Path: "/implicit", Kind: store.KindDir},              // existing: unchanged, but now explicit
		{Path: "/p", Kind: store.KindFile, Size: 6},           // placeholder with a new size: stale
		{Path: "/new/deep/q", Kind: store.KindFile, Size: -1}, // created; its parents are not counted
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res != (store.DeclareResult{Created: 1, Stale: 1, Unchanged: 1}) {
		t.Errorf("result %+v", res)
	}
	if e, _ := s.Stat(ctx, "/implicit"); !e.Explicit || e.Revision <= rev {
		t.Errorf("/implicit = %+v, want explicit at a new revision", e)
	}
	if e, _ := s.Stat(ctx, "/p"); e.Size != 6 || e.Present {
		t.Errorf("/p = %+v", e)
	}
}

func TestUploadIDTooLong(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, nil)
	_, err := s.PutChunk(ctx, store.Chunk{UploadID: strings.Repeat("u", 257), Count: 1, Data: []byte("x"), File: store.PutRequest{Path: "/f", SHA256: storetest.Sum([]byte("x"))}})
	if !errors.Is(err, store.ErrUpload) {
		t.Errorf("a 257-byte upload id: %v, want ErrUpload", err)
	}
	if st := stats(t, s); st.Uploads != 0 {
		t.Errorf("%+v, want no upload", st)
	}
	if rev, _ := s.Revision(ctx); rev != 0 {
		t.Errorf("revision %d", rev)
	}
}
