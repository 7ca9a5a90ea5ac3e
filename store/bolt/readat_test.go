package bolt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// TestReadAtRanges reads byte ranges of a blob stored in many chunks,
// written once by Put and once through an upload whose pieces do not line
// up with the chunks (one of them empty).
func TestReadAtRanges(t *testing.T) {
	ctx := context.Background()
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 1000})
	data := make([]byte, 10_500)
	rand.Read(data)
	mustPut(t, s, "/put", data)
	pieces := []int{333, 1500, 0, 2667, 1, 5999}
	file := store.PutRequest{Path: "/upload", SHA256: storetest.Sum(data)}
	off := 0
	for i, n := range pieces {
		if _, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: i, Count: len(pieces), Data: data[off : off+n], File: file}); err != nil {
			t.Fatal(err)
		}
		off += n
	}
	if st := stats(t, s); st.Blobs != 1 || st.Chunks != 11 {
		t.Errorf("%+v, want one blob of 11 chunks", st)
	}
	// Drop the Put copy: what remains was written by the upload path.
	if err := s.Remove(ctx, store.RemoveRequest{Path: "/put"}); err != nil {
		t.Fatal(err)
	}
	ranges := []struct{ off, n int }{
		{0, 1}, {999, 1}, {999, 2}, {1000, 1000}, {1001, 998}, {500, 3000},
		{0, 10_500}, {10_499, 1}, {10_000, 500}, {9_999, 501}, {123, 9_000},
	}
	c, err := s.Open(ctx, "/upload")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, r := range ranges {
		p := make([]byte, r.n)
		n, err := c.ReadAt(p, int64(r.off))
		if n != r.n || (err != nil && err != io.EOF) {
			t.Errorf("ReadAt(%d bytes at %d) = %d, %v", r.n, r.off, n, err)
			continue
		}
		if !bytes.Equal(p, data[r.off:r.off+r.n]) {
			t.Errorf("ReadAt(%d bytes at %d): wrong bytes", r.n, r.off)
		}
	}
}
