package bolt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// brokenReader fails after n bytes, like a client that disconnects.
type brokenReader struct{ n int }

func (b *brokenReader) Read(p []byte) (int, error) {
	if b.n == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	m := min(len(p), b.n)
	b.n -= m
	return m, nil
}

// TestPutStreamLeavesNothing checks that a refused stream deletes the
// chunks it staged: the file's blobs, chunks and orphans are as before.
func TestPutStreamLeavesNothing(t *testing.T) {
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 4096})
	ctx := context.Background()
	mustPut(t, s, "/keep", []byte("kept"))
	before, err := bolt.ReadStats(s)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 3<<16) // 3 MiB: several staging transactions
	for name, call := range map[string]func() error{
		"disconnect": func() error {
			_, err := s.PutStream(ctx, store.PutRequest{Path: "/f"}, &brokenReader{n: 2 << 20}, -1)
			return err
		},
		"disconnect with a declared hash": func() error {
			_, err := s.PutStream(ctx, store.PutRequest{Path: "/f", SHA256: storetest.Sum(data)}, &brokenReader{n: 2 << 20}, -1)
			return err
		},
		"hash mismatch": func() error {
			_, err := s.PutStream(ctx, store.PutRequest{Path: "/f", SHA256: storetest.Sum([]byte("x"))}, bytes.NewReader(data), -1)
			return err
		},
	} {
		if err := call(); err == nil || errors.Is(err, store.ErrClosed) {
			t.Fatalf("%s: %v, want a refusal", name, err)
		}
		after, err := bolt.ReadStats(s)
		if err != nil {
			t.Fatal(err)
		}
		if after != before {
			t.Errorf("%s left %+v, had %+v", name, after, before)
		}
		if err := bolt.Verify(s); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestPutStreamsLeavesNothing checks that PutStreams failing at its last
// file deletes what the files before it staged.
func TestPutStreamsLeavesNothing(t *testing.T) {
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 4096})
	mustPut(t, s, "/keep", []byte("kept"))
	before, err := bolt.ReadStats(s)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	_, err = s.PutStreams(context.Background(), func() (store.PutRequest, io.Reader, error) {
		i++
		switch {
		case i == 5:
			return store.PutRequest{Path: "/t/last"}, &brokenReader{n: 100 << 10}, nil
		case i > 5:
			return store.PutRequest{}, nil, io.EOF
		}
		return store.PutRequest{Path: fmt.Sprintf("/t/f%d", i)}, bytes.NewReader(bytes.Repeat([]byte{byte(i)}, i*300<<10)), nil
	})
	if err == nil {
		t.Fatal("PutStreams with a broken reader succeeded")
	}
	after, err := bolt.ReadStats(s)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("left %+v, had %+v", after, before)
	}
	if err := bolt.Verify(s); err != nil {
		t.Error(err)
	}
}

// TestPutStreamManyTransactions streams 2.5 MiB in staging transactions
// of 1 MiB (a depot's are 16 MiB: 40 MiB showed the same), three
// transactions of which one commits while the next batch is read, and as
// many to copy them under their hash: the file reads back whole, with or
// without a declared hash, with a key or without (the buffers of
// committed batches are reused for the next, the last chunk is short),
// none of it in the clear with a key, and a client that disconnects while
// a transaction is in flight leaves nothing behind.
func TestPutStreamManyTransactions(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			t.Parallel()
			const batch = 1 << 20
			o := bolt.Options{ChunkSize: batch / 16}
			if sealed {
				o.Key = testKEK(t)
			}
			s, path := openTemp(t, bolt.WithBatchBytes(o, batch))
			ctx := context.Background()
			data := make([]byte, batch*5/2+1000)
			for i := range data {
				data[i] = byte(i*31 + i>>16)
			}
			for _, declared := range []string{"", storetest.Sum(data)} {
				p := "/big/" + fmt.Sprint(declared != "")
				res, err := s.PutStream(ctx, store.PutRequest{Path: p, SHA256: declared}, bytes.NewReader(data), int64(len(data)))
				if err != nil {
					t.Fatalf("declared %q: %v", declared, err)
				}
				if res.Entry.SHA256 != storetest.Sum(data) || !bytes.Equal(readAll(t, s, p), data) {
					t.Fatalf("declared %q: stored content differs", declared)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if clear := bytes.Contains(raw, data[1000:1256]); clear == sealed {
					t.Fatalf("declared %q: the file holds the content in the clear: %v", declared, clear)
				}
				if err := s.Remove(ctx, store.RemoveRequest{Path: p}); err != nil {
					t.Fatal(err)
				}
			}
			before, err := bolt.ReadStats(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, declared := range []string{"", storetest.Sum(data)} {
				// Two transactions staged, the third batch cut short.
				if _, err := s.PutStream(ctx, store.PutRequest{Path: "/cut", SHA256: declared}, &brokenReader{n: batch * 9 / 4}, -1); err == nil {
					t.Fatalf("declared %q: a disconnected stream succeeded", declared)
				}
				if after, err := bolt.ReadStats(s); err != nil || after != before {
					t.Errorf("declared %q: left %+v (%v), had %+v", declared, after, err, before)
				}
			}
			if err := bolt.Verify(s); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestPutStreamsOneCommit: a tree of small files (an archive, a
// directory push) costs one commit and one fsync, not three per file;
// a file larger than a chunk in it is still streamed, and read back whole.
func TestPutStreamsOneCommit(t *testing.T) {
	s, _ := openTemp(t, &bolt.Options{ChunkSize: 4096})
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		files       int
		large       int // bytes of one more file, streamed; 0: none
		wantCommits uint64
	}{
		{"small", 200, 0, 1},
		{"with a large file", 50, 5 * 4096, 5}, // staged, copied under its hash, staging swept, its record, the change
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string][]byte{}
			var order []string
			for i := range tc.files {
				p := fmt.Sprintf("/%s/f%03d", tc.name, i)
				want[p], order = bytes.Repeat([]byte{byte(i)}, 1+i*7%4000), append(order, p)
			}
			if tc.large > 0 {
				p := "/" + tc.name + "/large"
				want[p], order = bytes.Repeat([]byte("large!"), tc.large/6+1), append(order, p)
			}
			before, err := bolt.Commits(s)
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			_, err = s.PutStreams(ctx, func() (store.PutRequest, io.Reader, error) {
				if i == len(order) {
					return store.PutRequest{}, nil, io.EOF
				}
				p := order[i]
				i++
				return store.PutRequest{Path: p}, bytes.NewReader(want[p]), nil
			})
			if err != nil {
				t.Fatal(err)
			}
			after, err := bolt.Commits(s)
			if err != nil {
				t.Fatal(err)
			}
			if got := after - before; got != tc.wantCommits {
				t.Errorf("PutStreams of %d files committed %d times, want %d", len(order), got, tc.wantCommits)
			}
			for p, data := range want {
				if got := readAll(t, s, p); !bytes.Equal(got, data) {
					t.Errorf("%s: %d bytes read back, want %d", p, len(got), len(data))
				}
			}
		})
	}
	if err := bolt.Verify(s); err != nil {
		t.Error(err)
	}
}
