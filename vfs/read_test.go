package vfs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// chunkSize is small in these tests so that modest files span many store
// chunks, with reads crossing chunk boundaries at odd places.
const chunkSize = 1000

var readFiles = []struct {
	name string
	path string
	data []byte
}{
	{"text", "/docs/readme.txt", []byte("hello, depot\nsecond line\n")},
	{"empty", "/empty", nil},
	{"binary", "/bin/blob.bin", pattern(4096, 1)},
	{"one byte over a chunk", "/a/b/c/over", pattern(chunkSize+1, 2)},
	{"multi-chunk", "/big/multi", pattern(3*1024*1024+17, 3)},
	{"unicode name", "/ünï cödé/naïve file.txt", []byte("unicode\n")},
}

func TestRead(t *testing.T) {
	st, _ := newStore(t, &bolt.Options{ChunkSize: chunkSize})
	m := mount(t, st, nil)
	for _, f := range readFiles {
		put(t, st, m, store.PutRequest{Path: f.path, Data: f.data})
	}
	for _, f := range readFiles {
		t.Run(f.name, func(t *testing.T) {
			p := m.path(f.path)
			if got := readFile(t, p); !bytes.Equal(got, f.data) {
				t.Errorf("os.ReadFile: got %d bytes, want %d (contents differ)", len(got), len(f.data))
			}
			out, err := exec.Command("cat", p).Output()
			if err != nil {
				t.Fatalf("cat: %v", err)
			}
			if !bytes.Equal(out, f.data) {
				t.Errorf("cat: got %d bytes, want %d (contents differ)", len(out), len(f.data))
			}
			out, err = exec.Command("sha256sum", p).Output()
			if err != nil {
				t.Fatalf("sha256sum: %v", err)
			}
			sum := sha256.Sum256(f.data)
			if got, _, _ := strings.Cut(string(out), " "); got != hex.EncodeToString(sum[:]) {
				t.Errorf("sha256sum = %s, want %x", got, sum)
			}
		})
	}
}

func TestReadAt(t *testing.T) {
	st, _ := newStore(t, &bolt.Options{ChunkSize: chunkSize})
	m := mount(t, st, nil)
	data := pattern(5*chunkSize+333, 9)
	put(t, st, m, store.PutRequest{Path: "/f", Data: data})
	f, err := os.Open(m.path("/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	size := int64(len(data))
	tests := []struct {
		off int64
		n   int
	}{
		{0, 1}, {1, 7}, {999, 2}, {chunkSize, chunkSize}, {chunkSize - 1, 3*chunkSize + 2},
		{4097, 4096}, {size - 1, 1}, {size - 10, 100}, {size, 5}, {size + 4096, 1},
		{0, len(data)}, {17, len(data)},
	}
	for _, tt := range tests {
		buf := make([]byte, tt.n)
		n, err := f.ReadAt(buf, tt.off)
		want := []byte{}
		if tt.off < size {
			want = data[tt.off:min(size, tt.off+int64(tt.n))]
		}
		if n != len(want) || !bytes.Equal(buf[:n], want) {
			t.Errorf("ReadAt(%d bytes at %d) = %d bytes, want %d (or contents differ)", tt.n, tt.off, n, len(want))
		}
		if n < tt.n && err != io.EOF {
			t.Errorf("ReadAt(%d bytes at %d): short read with error %v, want io.EOF", tt.n, tt.off, err)
		}
	}
}
