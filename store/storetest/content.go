package storetest

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/store"
)

// pattern returns n bytes that differ at every offset modulo 251.
//
// The race detector does not watch it (go:norace): b is its own until it
// returns, and watched, each byte cost an instrumented store: a MiB took
// 1 s of CPU (55 ms unwatched, at load 15), which the suite's files of
// several MiB paid in every store's run of it.
//
//go:norace
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) ^ seed
	}
	return b
}

func testOpen(t *testing.T, open func(t *testing.T) store.Store) {
	t.Run("ReadAt", func(t *testing.T) {
		s := open(t)
		data := pattern(100_000, 7)
		put(t, s, "/f", data)
		c, err := s.Open(t.Context(), "/f")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if c.Size() != int64(len(data)) || c.SHA256() != Sum(data) {
			t.Errorf("Size %d SHA256 %s, want %d %s", c.Size(), c.SHA256(), len(data), Sum(data))
		}
		tests := []struct {
			off, n  int
			wantN   int
			wantEOF bool
		}{
			{0, 10, 10, false},
			{99_990, 10, 10, false},
			{99_990, 20, 10, true},
			{100_000, 5, 0, true},
			{200_000, 5, 0, true},
			{12_345, 50_000, 50_000, false},
			{0, 100_000, 100_000, false},
			{5, 0, 0, false},
		}
		for _, tt := range tests {
			p := make([]byte, tt.n)
			n, err := c.ReadAt(p, int64(tt.off))
			if n != tt.wantN || (err == io.EOF) != tt.wantEOF || (err != nil && err != io.EOF) {
				t.Errorf("ReadAt(%d bytes at %d) = %d, %v; want %d, EOF %v", tt.n, tt.off, n, err, tt.wantN, tt.wantEOF)
				continue
			}
			if n > 0 && !bytes.Equal(p[:n], data[tt.off:tt.off+n]) {
				t.Errorf("ReadAt(%d bytes at %d) returned the wrong bytes", tt.n, tt.off)
			}
		}
		if _, err := c.ReadAt(make([]byte, 1), -1); err == nil {
			t.Error("ReadAt at a negative offset succeeded")
		}
	})
	t.Run("Errors", func(t *testing.T) {
		s := open(t)
		put(t, s, "/d/f", []byte("x"))
		if _, err := s.Declare(t.Context(), store.DeclareRequest{Entries: []store.Declaration{{Path: "/ph", Kind: store.KindFile, Size: 10}}}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			path string
			want error
		}{
			{"/missing", store.ErrNotExist},
			{"/d/f/g", store.ErrNotExist},
			{"/d", store.ErrIsDir},
			{"/", store.ErrIsDir},
			{"/ph", store.ErrNotPresent},
		} {
			c, err := s.Open(t.Context(), tt.path)
			if err == nil {
				c.Close()
			}
			wantErr(t, "Open("+tt.path+")", err, tt.want)
		}
	})
	t.Run("Snapshot", func(t *testing.T) {
		s := open(t)
		old := pattern(50_000, 1)
		put(t, s, "/f", old)
		put(t, s, "/g", old)
		c1, err := s.Open(t.Context(), "/f")
		if err != nil {
			t.Fatal(err)
		}
		c2, err := s.Open(t.Context(), "/g")
		if err != nil {
			t.Fatal(err)
		}
		put(t, s, "/f", pattern(50_000, 2))
		if err := s.Remove(t.Context(), store.RemoveRequest{Path: "/g"}); err != nil {
			t.Fatal(err)
		}
		if got := readContent(t, c1); !bytes.Equal(got, old) {
			t.Error("a Content opened before an update reads the new bytes")
		}
		// Both Contents hold the same blob, now unreferenced: closing one
		// must leave the other readable.
		if err := c1.Close(); err != nil {
			t.Fatal(err)
		}
		if got := readContent(t, c2); !bytes.Equal(got, old) {
			t.Error("a Content opened before a remove lost its bytes")
		}
		if err := c2.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c2.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := c2.ReadAt(make([]byte, 1), 0); err == nil {
			t.Error("ReadAt after Close succeeded")
		}
		if got := read(t, s, "/f"); !bytes.Equal(got, pattern(50_000, 2)) {
			t.Error("the updated file reads wrong")
		}
		put(t, s, "/h", old)
		if got := read(t, s, "/h"); !bytes.Equal(got, old) {
			t.Error("content stored again after its last Content closed reads wrong")
		}
	})
	t.Run("ConcurrentReadAt", func(t *testing.T) {
		s := open(t)
		data := pattern(300_000, 3)
		put(t, s, "/f", data)
		c, err := s.Open(t.Context(), "/f")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				p := make([]byte, 4096)
				for off := g * 1000; off < len(data); off += 37_000 {
					n, err := c.ReadAt(p, int64(off))
					if err != nil && err != io.EOF {
						errs <- err
						return
					}
					if !bytes.Equal(p[:n], data[off:off+n]) {
						errs <- errors.New("wrong bytes")
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}
