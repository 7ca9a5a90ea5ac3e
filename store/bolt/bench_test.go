package bolt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// BenchmarkPut writes new content (each write differs) to 100 paths in
// turn: one committed, fsynced transaction per write.
func BenchmarkPut(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20, 8 << 20} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s, _ := openTemp(b, nil)
			data := make([]byte, size)
			rand.Read(data)
			ctx := context.Background()
			b.SetBytes(int64(size))
			i := uint64(0)
			for b.Loop() {
				binary.BigEndian.PutUint64(data, i)
				if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/bench/f%d", i%100), Data: data}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkPutChunk uploads 16 MiB in 1 MiB chunks, completion included.
func BenchmarkPutChunk(b *testing.B) {
	const size, part = 16 << 20, 1 << 20
	s, _ := openTemp(b, nil)
	data := make([]byte, size)
	rand.Read(data)
	ctx := context.Background()
	b.SetBytes(size)
	i := uint64(0)
	for b.Loop() {
		binary.BigEndian.PutUint64(data, i)
		file := store.PutRequest{Path: "/bench/upload", SHA256: storetest.Sum(data)}
		for j := range size / part {
			c := store.Chunk{UploadID: fmt.Sprint("u", i), Index: j, Count: size / part, Data: data[j*part : (j+1)*part], File: file}
			if _, err := s.PutChunk(ctx, c); err != nil {
				b.Fatal(err)
			}
		}
		i++
	}
}

// BenchmarkReadAt reads a 64 MiB file sequentially through one Content, in
// reads of the given size, as the FUSE layer does.
func BenchmarkReadAt(b *testing.B) {
	const size = 64 << 20
	for _, read := range []int{4 << 10, 128 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", read>>10), func(b *testing.B) {
			s, _ := openTemp(b, nil)
			data := make([]byte, size)
			rand.Read(data)
			mustPut(b, s, "/big", data)
			c, err := s.Open(context.Background(), "/big")
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p := make([]byte, read)
			b.SetBytes(int64(read))
			off := int64(0)
			for b.Loop() {
				if _, err := c.ReadAt(p, off); err != nil {
					b.Fatal(err)
				}
				off = (off + int64(read)) % size
			}
		})
	}
}

// BenchmarkStat looks up one entry among 10,000.
func BenchmarkStat(b *testing.B) {
	s, _ := openTemp(b, nil)
	ctx := context.Background()
	var decl []store.Declaration
	for i := range 10_000 {
		decl = append(decl, store.Declaration{Path: fmt.Sprintf("/d%d/f%d", i%100, i), Kind: store.KindFile, Size: int64(i)})
	}
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: decl}); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		if _, err := s.Stat(ctx, decl[i%len(decl)].Path); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadDir lists a directory of 10,000 entries.
func BenchmarkReadDir(b *testing.B) {
	s, _ := openTemp(b, nil)
	ctx := context.Background()
	var decl []store.Declaration
	for i := range 10_000 {
		decl = append(decl, store.Declaration{Path: fmt.Sprintf("/dir/file-%05d.txt", i), Kind: store.KindFile, Size: int64(i)})
	}
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: decl}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		es, err := s.ReadDir(ctx, "/dir")
		if err != nil || len(es) != len(decl) {
			b.Fatal(len(es), err)
		}
	}
}

// putDirOfFiles stores n small files in dir in one batch, as bench/scale.sh's
// tree holds them, and returns their requests.
func putDirOfFiles(b *testing.B, s *bolt.Store, dir string, n int) []store.PutRequest {
	b.Helper()
	reqs := make([]store.PutRequest, n)
	for i := range reqs {
		reqs[i] = store.PutRequest{Path: fmt.Sprintf("%s/f%08d.txt", dir, i), Data: []byte(fmt.Sprint(i))}
	}
	if _, err := s.PutBatch(context.Background(), reqs); err != nil {
		b.Fatal(err)
	}
	return reqs
}

// BenchmarkReadDirFiles lists a directory of 1,000 stored files, as the
// mount does for each directory a walk opens (bench/scale.sh's tree).
func BenchmarkReadDirFiles(b *testing.B) {
	s, _ := openTemp(b, nil)
	ctx := context.Background()
	reqs := putDirOfFiles(b, s, "/b0/d00000", 1000)
	b.ReportAllocs()
	for b.Loop() {
		es, err := s.ReadDir(ctx, "/b0/d00000")
		if err != nil || len(es) != len(reqs) {
			b.Fatal(len(es), err)
		}
	}
}

// BenchmarkPutEvict compares, at the same sizes, a Put that replaces a
// file's content (the old content is deleted, nothing is evicted) with
// one that must evict the least recently used file to stay within
// MaxStoreBytes (100 files' worth, writes cycling over 200 paths).
func BenchmarkPutEvict(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		for _, evict := range []bool{false, true} {
			name := fmt.Sprintf("%dKiB/replace", size>>10)
			opts := &bolt.Options{}
			paths := uint64(100)
			if evict {
				name = fmt.Sprintf("%dKiB/evict", size>>10)
				opts.MaxStoreBytes = 100 * int64(size)
				paths = 200
			}
			b.Run(name, func(b *testing.B) {
				s, _ := openTemp(b, opts)
				data := make([]byte, size)
				rand.Read(data)
				ctx := context.Background()
				put := func(i uint64) store.PutResult {
					binary.BigEndian.PutUint64(data, i)
					res, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/bench/f%d", i%paths), Data: data})
					if err != nil {
						b.Fatal(err)
					}
					return res
				}
				i := uint64(0)
				for ; i < paths; i++ { // the store is full, or every path exists
					put(i)
				}
				b.SetBytes(int64(size))
				evicted, n := 0, 0
				for b.Loop() {
					evicted += put(i).Evicted.Count
					i++
					n++
				}
				if evict && evicted != n {
					b.Fatalf("%d evictions in %d writes", evicted, n)
				}
				if !evict && evicted != 0 {
					b.Fatalf("%d evictions without a limit", evicted)
				}
			})
		}
	}
}

// BenchmarkPutConcurrent writes new 1 KiB files from the given number of
// goroutines at once: concurrent writes share transactions and fsyncs
// (group commit), so the rate grows with the writers.
func BenchmarkPutConcurrent(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			s, _ := openTemp(b, nil)
			ctx := context.Background()
			var next atomic.Uint64
			b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			b.SetBytes(1 << 10)
			b.RunParallel(func(pb *testing.PB) {
				data := make([]byte, 1<<10)
				for pb.Next() {
					i := next.Add(1)
					binary.BigEndian.PutUint64(data, i)
					if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/bench/d%d/f%d", i%64, i), Data: data}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkPutStream streams 64 MiB with a declared hash into the store, as
// a raw HTTP upload does.
func BenchmarkPutStream(b *testing.B) {
	const size = 64 << 20
	s, _ := openTemp(b, nil)
	data := make([]byte, size)
	rand.Read(data)
	ctx := context.Background()
	b.SetBytes(size)
	i := uint64(0)
	for b.Loop() {
		binary.BigEndian.PutUint64(data, i)
		req := store.PutRequest{Path: fmt.Sprintf("/bench/f%d", i%4), SHA256: storetest.Sum(data)}
		if _, err := s.PutStream(ctx, req, bytes.NewReader(data), size); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
