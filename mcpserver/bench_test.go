package mcpserver_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// BenchmarkChunkPush pushes 64 MiB as eight 8 MiB base64 chunks of
// guide_read_file over streamable HTTP, one at a time: the path where
// encoding/json's passes over a chunk's content cost most. Profile it with
// -cpuprofile.
func BenchmarkChunkPush(b *testing.B) {
	const size, part = 64 << 20, 8 << 20
	h := newHarnessOver(b, nil, "http")
	data := make([]byte, size)
	rand.Read(data)
	b.SetBytes(size)
	n := 0
	for b.Loop() {
		data[0] = byte(n) // new content each time
		whole := sum(data)
		for i := range size / part {
			env := h.call("guide_read_file", m{
				"path": "/bench/big.bin", "upload_id": fmt.Sprint("u", n), "chunk_index": i, "chunk_count": size / part,
				"sha256": whole, "encoding": "base64", "content": base64.StdEncoding.EncodeToString(data[i*part : (i+1)*part]),
			})
			if !env.Success {
				b.Fatalf("chunk %d: %+v", i, env.Error)
			}
		}
		n++
	}
}

// BenchmarkSmallFiles pushes 1 KiB files with guide_cache_file over
// streamable HTTP, 8 calls in flight, as bench/ingest does: each call's
// cost beside the shared commits.
func BenchmarkSmallFiles(b *testing.B) {
	h := newHarnessOver(b, nil, "http")
	content := strings.Repeat("x", 1024)
	var next atomic.Int64
	b.SetParallelism(4) // 8 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			env := h.call("guide_cache_file", m{"path": fmt.Sprintf("/bench/d%d/f%d.txt", i%100, i), "content": content})
			if !env.Success {
				b.Errorf("call %d: %+v", i, env.Error)
				return
			}
		}
	})
}

// BenchmarkCacheFiles pushes 100 files of 1 KiB per guide_cache_files
// call over streamable HTTP, 8 calls in flight.
func BenchmarkCacheFiles(b *testing.B) {
	h := newHarnessOver(b, nil, "http")
	content := strings.Repeat("x", 1024)
	var next atomic.Int64
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			files := make([]any, 100)
			for j := range files {
				files[j] = m{"path": fmt.Sprintf("/bench/c%d/f%d.txt", i, j), "content": content}
			}
			if env := h.call("guide_cache_files", m{"files": files}); !env.Success {
				b.Errorf("call %d: %+v", i, env.Error)
				return
			}
		}
	})
}
