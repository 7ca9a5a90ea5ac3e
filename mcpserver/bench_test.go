package mcpserver_test

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"testing"
)

// BenchmarkChunkPush pushes 64 MiB as eight 8 MiB base64 chunks of
// guide_read_file over streamable HTTP, one at a time: the path whose JSON
// passes issue 10 measured. Profile it with -cpuprofile.
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
