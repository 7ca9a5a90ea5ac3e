package vfs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/vfs"
)

// TestPassthroughBlobCache checks the life of a blob in the passthrough
// cache: copied in after the write, read through it, dropped when the file
// changes or goes, and never used for a small file.
func TestPassthroughBlobCache(t *testing.T) {
	st, _ := newStore(t, nil)
	m := mount(t, st, &vfs.Options{Debug: true}) // logs the passthrough ioctls
	if !m.Passthrough() {
		t.Skip("passthrough is off (not root, no kernel support, or DEPOTFS_PASSTHROUGH=false)")
	}
	v1, v2 := pattern(vfs.PassthroughMinSize, 1), pattern(3<<20, 2)
	small := []byte("small")
	put(t, st, m, store.PutRequest{Path: "/big", Data: v1})
	put(t, st, m, store.PutRequest{Path: "/small", Data: small})
	if got := readFile(t, m.path("/big")); !bytes.Equal(got, v1) {
		t.Fatal("v1 reads wrong through passthrough")
	}
	readFile(t, m.path("/small"))
	if log := m.log.String(); !regexp.MustCompile(`BACKING_OPEN .*: id [1-9][0-9]* \(errno 0\)`).MatchString(log) {
		t.Errorf("the kernel did not take the blob file for passthrough:\n%s", grepLines(log, "BACKING"))
	}
	if got := cachedBlobs(t, m); !slices.Equal(got, []string{storetest.Sum(v1)}) {
		t.Errorf("blob cache holds %v, want only v1's blob", got)
	}

	f, err := os.Open(m.path("/big"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	put(t, st, m, store.PutRequest{Path: "/big", Data: v2})
	if got := readFile(t, m.path("/big")); !bytes.Equal(got, v2) {
		t.Error("v2 reads wrong through passthrough")
	}
	// The file opened before the update still reads v1, from the blob
	// file the cache has already deleted.
	old := make([]byte, len(v1)+1)
	if n, _ := f.ReadAt(old, 0); !bytes.Equal(old[:n], v1) {
		t.Error("a file opened before the update does not read v1 to the end")
	}
	if got := cachedBlobs(t, m); !slices.Equal(got, []string{storetest.Sum(v2)}) {
		t.Errorf("after the update the blob cache holds %v, want only v2's blob", got)
	}
	if err := st.Remove(context.Background(), store.RemoveRequest{Path: "/big"}); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, st, m)
	if got := cachedBlobs(t, m); len(got) != 0 {
		t.Errorf("after the removal the blob cache holds %v", got)
	}
}

// TestStatfs checks what df and getconf see: the store's limit as the size,
// its content as used, 4 KiB blocks and 255-byte names.
func TestStatfs(t *testing.T) {
	st, _ := newStore(t, &bolt.Options{MaxStoreBytes: 64 << 20})
	m := mount(t, st, nil)
	put(t, st, m, store.PutRequest{Path: "/f", Data: pattern(1<<20, 1)})
	var s syscall.Statfs_t
	if err := syscall.Statfs(m.path("/f"), &s); err != nil {
		t.Fatal(err)
	}
	if s.Bsize != 4096 || s.Frsize != 4096 || s.Namelen != 255 {
		t.Errorf("block size %d, fragment size %d, name length %d; want 4096, 4096, 255", s.Bsize, s.Frsize, s.Namelen)
	}
	if s.Blocks != (64<<20)/4096 || s.Blocks-s.Bfree != (1<<20)/4096 || s.Bavail != s.Bfree {
		t.Errorf("blocks %d, free %d, available %d; want %d with %d used", s.Blocks, s.Bfree, s.Bavail, (64<<20)/4096, (1<<20)/4096)
	}
	if s.Files-s.Ffree != 2 {
		t.Errorf("%d inodes used, want 2 (the root and /f)", s.Files-s.Ffree)
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBlobPathsBounded: the paths the mount remembers a cached blob for
// (to drop the blob when the path changes) are bounded by what the cache
// holds, not by how many large files were ever read: those whose blob was
// evicted are forgotten. It grew by one path for every large file read.
func TestBlobPathsBounded(t *testing.T) {
	defer vfs.SetMinPruneAt(8)()
	st, _ := newStore(t, nil)
	m := mount(t, st, &vfs.Options{Passthrough: true, BlobCacheDir: filepath.Join(t.TempDir(), "blobs"), BlobCacheBytes: 3 * vfs.PassthroughMinSize})
	if !m.Passthrough() {
		t.Skip("passthrough is off (not root, no kernel support, or DEPOTFS_PASSTHROUGH=false)")
	}
	const files = 40
	for i := range files {
		p := fmt.Sprintf("/big%02d", i)
		data := pattern(vfs.PassthroughMinSize, byte(i))
		put(t, st, m, store.PutRequest{Path: p, Data: data})
		if got := readFile(t, m.path(p)); !bytes.Equal(got, data) {
			t.Fatalf("%s reads wrong", p)
		}
	}
	if n := vfs.BlobPaths(m.Server); n > 16 {
		t.Errorf("the mount remembers blobs for %d paths after reading %d large files through a cache of 3 blobs", n, files)
	}
}
