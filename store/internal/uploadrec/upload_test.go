package uploadrec_test

import (
	"errors"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
)

func chunk(i, count int, data string, total int64) store.Chunk {
	return store.Chunk{UploadID: "u", Index: i, Count: count, Data: []byte(data), TotalSize: total,
		File: store.PutRequest{Path: "/f", SHA256: "aa", Data: []byte("dropped")}}
}

func TestUpload(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := uploadrec.Start(chunk(0, 3, "ab", 6), now)
	if u.File.Data != nil || u.Count != 3 || !u.Started.Equal(now) {
		t.Fatalf("Start: %+v", u)
	}
	lim := check.Limits{MaxFileBytes: 10}
	for _, tc := range []struct {
		name string
		c    store.Chunk
		want error
	}{
		{"other count", chunk(0, 4, "ab", 0), store.ErrUpload},
		{"other path", func() store.Chunk { c := chunk(0, 3, "ab", 0); c.File.Path = "/g"; return c }(), store.ErrUpload},
		{"other hash", func() store.Chunk { c := chunk(0, 3, "ab", 0); c.File.SHA256 = "bb"; return c }(), store.ErrUpload},
	} {
		if err := u.Matches(tc.c); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := u.Admit(lim, chunk(0, 3, "ab", 6)); err != nil || u.Total != 6 {
		t.Fatalf("first chunk: %v, total %d", err, u.Total)
	}
	u.Add(2, now.Add(time.Second))
	if err := u.Admit(lim, chunk(1, 3, "ab", 7)); !errors.Is(err, store.ErrUpload) {
		t.Fatalf("another announced size: %v", err)
	}
	if err := u.Admit(lim, chunk(1, 3, "abcde", 0)); !errors.Is(err, store.ErrUpload) {
		t.Fatalf("more bytes than announced: %v", err)
	}
	u.Add(2, now.Add(2*time.Second))
	if err := u.Admit(lim, chunk(2, 3, "a", 0)); !errors.Is(err, store.ErrUpload) {
		t.Fatalf("a last chunk short of the announced size: %v", err)
	}
	if err := u.Admit(check.Limits{MaxFileBytes: 5}, chunk(2, 3, "ab", 0)); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("over the file limit: %v", err)
	}
	if u.Ready() {
		t.Fatal("ready with a chunk missing")
	}
	if err := u.Admit(lim, chunk(2, 3, "ab", 0)); err != nil {
		t.Fatalf("the last chunk: %v", err)
	}
	u.Add(2, now.Add(3*time.Second))
	p := u.Progress("u")
	if !u.Ready() || p.Received != 3 || p.Bytes != 6 || p.Complete {
		t.Fatalf("after every chunk: ready %v, progress %+v", u.Ready(), p)
	}
	u.Result = &store.PutResult{Status: store.StatusCreated}
	if u.Ready() || !u.Progress("u").Complete {
		t.Fatal("a completed upload is ready again or reports no completion")
	}
}
