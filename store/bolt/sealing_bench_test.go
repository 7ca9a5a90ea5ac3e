package bolt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
)

// BenchmarkSealing runs the store's hot paths on a store without a key and
// on a sealed one, side by side: Put of 1 MiB, a 64 MiB stream (a raw
// upload), sequential 128 KiB reads (the kernel's) of a 64 MiB file, and
// the listing of 1,000 files (a sealed store opens each record's hash).
// Compare each clear/sealed pair with benchstat or by eye.
func BenchmarkSealing(b *testing.B) {
	ctx := context.Background()
	for _, sealed := range []bool{false, true} {
		name := map[bool]string{false: "clear", true: "sealed"}[sealed]
		open := func(b *testing.B) *bolt.Store {
			var k seal.Wrapper
			if sealed {
				k = testKEK(b)
			}
			s, _ := openTemp(b, &bolt.Options{Key: k})
			return s
		}
		b.Run("put1MiB/"+name, func(b *testing.B) {
			s := open(b)
			data := make([]byte, 1<<20)
			rand.Read(data)
			b.SetBytes(int64(len(data)))
			i := uint64(0)
			for b.Loop() {
				binary.BigEndian.PutUint64(data, i)
				if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i%100), Data: data}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("stream64MiB/"+name, func(b *testing.B) {
			s := open(b)
			data := make([]byte, 64<<20)
			rand.Read(data)
			b.SetBytes(int64(len(data)))
			i := uint64(0)
			for b.Loop() {
				binary.BigEndian.PutUint64(data, i)
				req := store.PutRequest{Path: fmt.Sprintf("/s%d", i%4), SHA256: storetest.Sum(data)}
				if _, err := s.PutStream(ctx, req, bytes.NewReader(data), int64(len(data))); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("readdir1000/"+name, func(b *testing.B) {
			s := open(b)
			var reqs []store.PutRequest
			for i := range 1000 {
				reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%08d.txt", i), Data: []byte(fmt.Sprint(i))})
			}
			if _, err := s.PutBatch(ctx, reqs); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if es, err := s.ReadDir(ctx, "/d"); err != nil || len(es) != len(reqs) {
					b.Fatal(len(es), err)
				}
			}
		})
		b.Run("read128KiB/"+name, func(b *testing.B) {
			s := open(b)
			const size = 64 << 20
			data := make([]byte, size)
			rand.Read(data)
			if _, err := s.Put(ctx, store.PutRequest{Path: "/big", Data: data}); err != nil {
				b.Fatal(err)
			}
			c, err := s.Open(ctx, "/big")
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			p := make([]byte, 128<<10)
			b.SetBytes(int64(len(p)))
			off := int64(0)
			for b.Loop() {
				if _, err := c.ReadAt(p, off); err != nil {
					b.Fatal(err)
				}
				off = (off + int64(len(p))) % size
			}
		})
	}
}

// BenchmarkSealFile seals an existing depot of 20,000 files of 4 KiB and
// 32 of 4 MiB (206 MiB), each iteration a fresh copy: the chunks move out
// sealed and back, and every index is renamed. The compaction 'depotfs
// seal' runs afterwards is not included.
func BenchmarkSealFile(b *testing.B) {
	ctx := context.Background()
	s, path := openTemp(b, nil)
	small := make([]byte, 4<<10)
	var reqs []store.PutRequest
	for i := range 20000 {
		binary.BigEndian.PutUint64(small, uint64(i))
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d%02d/f%05d", i%100, i), Data: bytes.Clone(small)})
		if len(reqs) == 1000 {
			if _, err := s.PutBatch(ctx, reqs); err != nil {
				b.Fatal(err)
			}
			reqs = nil
		}
	}
	big := make([]byte, 4<<20)
	for i := range 32 {
		rand.Read(big)
		if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/big%02d", i), Data: big}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	kek := testKEK(b)
	copyPath := path + ".copy"
	b.SetBytes(20000*4<<10 + 32*4<<20)
	for b.Loop() {
		b.StopTimer()
		if err := os.WriteFile(copyPath, orig, 0o600); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := bolt.SealFile(ctx, copyPath, kek, nil); err != nil {
			b.Fatal(err)
		}
	}
}
