package mcpserver_test

import (
	"encoding/base64"
	"math/rand/v2"
	"testing"

	"github.com/depotfs/depotfs/store/bolt"
)

func TestReadFileWhole(t *testing.T) {
	h := newHarness(t, nil)
	var d fileReply
	h.ok("guide_read_file", map[string]any{"path": "/src/main.go", "content": "package main\n", "mtime": "2024-05-01T12:00:00Z"}, &d)
	if d.Status != "created" || d.Path != "/src/main.go" || d.SHA256 != sum([]byte("package main\n")) || d.Upload != nil {
		t.Errorf("reply %+v", d)
	}
	e, _ := h.stat("/src/main.go")
	if e.Source != "guide_read_file" {
		t.Errorf("source %q", e.Source)
	}
}

// chunks splits data into n pieces of nearly equal size.
func chunks(data []byte, n int) [][]byte {
	out := make([][]byte, n)
	size := (len(data) + n - 1) / n
	for i := range out {
		lo, hi := min(i*size, len(data)), min((i+1)*size, len(data))
		out[i] = data[lo:hi]
	}
	return out
}

func TestReadFileChunked(t *testing.T) {
	// The store's chunks are small, so the upload's six parts (about 15.7
	// KiB each) straddle their boundaries as a large upload's do over the
	// default 1 MiB chunks; the bytes need not be MiBs to show a misplaced
	// or lost part.
	const storeChunk = 16 << 10
	h := startHarness(t, harnessConfig{store: &bolt.Options{ChunkSize: storeChunk}})
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 5*storeChunk+12345)
	for i := range data {
		data[i] = byte(rng.UintN(256))
	}
	parts := chunks(data, 6)
	whole := sum(data)
	const p = "/big/blob.bin"
	send := func(i int) fileReply {
		t.Helper()
		var d fileReply
		args := map[string]any{
			"path": p, "upload_id": "blob-1", "chunk_index": i, "chunk_count": len(parts),
			"content": base64.StdEncoding.EncodeToString(parts[i]), "encoding": "base64",
			"sha256": whole, "mtime": 1714564800,
		}
		if i%2 == 0 {
			args["chunk_sha256"] = sum(parts[i])
		}
		h.ok("guide_read_file", args, &d)
		return d
	}

	order := []int{3, 0, 5, 1, 1, 4} // chunk 1 is retried
	wantReceived := []int{1, 2, 3, 4, 4, 5}
	var bytesSoFar int64
	seen := map[int]bool{}
	for k, i := range order {
		if !seen[i] {
			bytesSoFar += int64(len(parts[i]))
			seen[i] = true
		}
		d := send(i)
		if d.Upload == nil || d.Upload.Complete || d.Upload.Received != wantReceived[k] || d.Upload.Count != 6 || d.Upload.Bytes != bytesSoFar {
			t.Fatalf("after chunk %d: progress %+v, want %d received, %d bytes", i, d.Upload, wantReceived[k], bytesSoFar)
		}
		if d.Status != "" || d.Path != p || d.SHA256 != whole || d.MountPath != testMount+p {
			t.Fatalf("after chunk %d: pending reply %+v", i, d)
		}
		if _, ok := h.stat(p); ok {
			t.Fatalf("the file is visible after chunk %d, before the upload completed", i)
		}
	}
	d := send(2)
	if d.Upload == nil || !d.Upload.Complete || d.Upload.Received != 6 || d.Status != "created" || d.SHA256 != whole || d.Size != int64(len(data)) {
		t.Fatalf("last chunk: reply %+v upload %+v", d, d.Upload)
	}
	if got := h.read(p); sum(got) != whole {
		t.Fatalf("stored content hashes to %s, want %s", sum(got), whole)
	}
	e, _ := h.stat(p)
	if e.MTime.Unix() != 1714564800 || e.Source != "guide_read_file upload blob-1" {
		t.Errorf("entry mtime %v source %q", e.MTime, e.Source)
	}
	if applied := h.appliedRevisions(); len(applied) != 1 || applied[0] != d.Revision {
		t.Errorf("Applied called with %v, want once with %d", applied, d.Revision)
	}
}

func TestReadFileChunkedFilename(t *testing.T) {
	h := newHarness(t, nil)
	data := []byte("0123456789abcdef")
	parts := chunks(data, 2)
	var d fileReply
	for i, part := range parts {
		h.ok("guide_read_file", map[string]any{
			"filename": "digits.txt", "upload_id": "d", "chunk_index": i, "chunk_count": 2,
			"content": string(part), "sha256": sum(data),
		}, &d)
	}
	if want := "/uploads/" + sum(data)[:16] + "/digits.txt"; d.Path != want || d.Status != "created" {
		t.Fatalf("path %q status %q, want %s created", d.Path, d.Status, want)
	}
}

func TestReadFileChunkedHashMismatch(t *testing.T) {
	h := newHarness(t, nil)
	data := []byte("abcdef")
	wrong := sum([]byte("something else"))
	h.ok("guide_read_file", map[string]any{"path": "/mismatch", "upload_id": "m", "chunk_index": 0, "chunk_count": 2, "content": "abc", "sha256": wrong}, nil)
	rev := h.revision()
	h.fail("guide_read_file", map[string]any{"path": "/mismatch", "upload_id": "m", "chunk_index": 1, "chunk_count": 2, "content": "def", "sha256": wrong}, "validation")
	if _, ok := h.stat("/mismatch"); ok || h.revision() != rev {
		t.Fatal("a chunked upload whose bytes do not match sha256 became visible")
	}
	_ = data
}
