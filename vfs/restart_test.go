package vfs_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/vfs"
)

// TestBlobCacheKeptAcrossRestart remounts a store over the blob cache of an
// earlier mount: an unchanged blob is served without being copied again, a
// blob whose file was written to meanwhile is not served (the file is
// read from the store and copied in again), a blob the store no longer
// holds is deleted, and a kept blob is still dropped when its path changes.
func TestBlobCacheKeptAcrossRestart(t *testing.T) {
	st, _ := newStore(t, nil)
	blobDir := filepath.Join(t.TempDir(), "blobs")
	opts := &vfs.Options{Passthrough: true, BlobCacheDir: blobDir, BlobCacheBytes: 1 << 30, Debug: true}
	m1 := mount(t, st, opts)
	if !m1.Passthrough() {
		t.Skip("passthrough is off (not root or no kernel support)")
	}
	a, b, c := pattern(vfs.PassthroughMinSize, 1), pattern(vfs.PassthroughMinSize+1, 2), pattern(1<<20, 3)
	for p, data := range map[string][]byte{"/a": a, "/b": b, "/c": c} {
		put(t, st, m1, store.PutRequest{Path: p, Data: data})
		if got := readFile(t, m1.path(p)); !bytes.Equal(got, data) {
			t.Fatalf("%s reads wrong before the restart", p)
		}
	}
	if err := m1.Unmount(); err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{a, b, c} {
		if _, err := os.Stat(filepath.Join(blobDir, storetest.Sum(data)+".seal")); err != nil {
			t.Fatalf("no seal after a clean unmount: %v", err)
		}
	}

	// While nothing runs: b's blob file is overwritten with bytes of the
	// same size, its times set back; c is removed from the store.
	tamper(t, filepath.Join(blobDir, storetest.Sum(b)), pattern(len(b), 9))
	if err := st.Remove(context.Background(), store.RemoveRequest{Path: "/c"}); err != nil {
		t.Fatal(err)
	}

	m2 := mount(t, st, opts)
	s, _ := m2.BlobCacheStats()
	if s.Kept != 2 || s.Dropped != 1 || s.Fills != 0 {
		t.Fatalf("after the restart: kept %d, dropped %d, filled %d; want a and c kept, the tampered b dropped, nothing filled", s.Kept, s.Dropped, s.Fills)
	}
	if got := readFile(t, m2.path("/a")); !bytes.Equal(got, a) {
		t.Error("/a reads wrong after the restart")
	}
	if s, _ := m2.BlobCacheStats(); s.Fills != 0 || s.Hits == 0 {
		t.Errorf("reading /a after the restart: %d fills, %d hits; want its kept blob served (0 fills)", s.Fills, s.Hits)
	}
	if log := m2.log.String(); !bytes.Contains([]byte(log), []byte("BACKING_OPEN")) {
		t.Error("the kept blob was not given to the kernel for passthrough")
	}
	if got := readFile(t, m2.path("/b")); !bytes.Equal(got, b) {
		t.Error("/b reads the tampered cache file, not the store's bytes")
	}
	if s, _ := m2.BlobCacheStats(); s.Fills != 1 {
		t.Errorf("reading /b after the restart: %d fills, want 1 (its blob copied in again)", s.Fills)
	}

	// The kept blob of c, which the store no longer holds, is deleted by
	// the walk after mounting.
	deadline := time.Now().Add(10 * time.Second)
	for s, _ := m2.BlobCacheStats(); s.Pruned != 1; s, _ = m2.BlobCacheStats() {
		if time.Now().After(deadline) {
			t.Fatalf("pruned %d blobs, want 1 (c's)", s.Pruned)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := cachedBlobs(t, m2); !slices.Equal(got, sorted(storetest.Sum(a), storetest.Sum(b))) {
		t.Errorf("blob cache holds %v, want a's and b's blobs", got)
	}
	// The walk recorded that a's kept blob is /a's content: updating /a
	// drops it.
	put(t, st, m2, store.PutRequest{Path: "/a", Data: pattern(vfs.PassthroughMinSize, 4)})
	if slices.Contains(cachedBlobs(t, m2), storetest.Sum(a)) {
		t.Error("a's kept blob survived the update of /a")
	}
}

// tamper overwrites the file at p with data, then sets its permissions and
// times back, as a careful intruder would; only its change time, which no
// system call sets, tells. It first waits until the filesystem's clock
// has moved past the file's last change, so that the write moves the
// change time even where timestamps are coarse.
func tamper(tb testing.TB, p string, data []byte) {
	tb.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		tb.Fatal(err)
	}
	before := fi.Sys().(*syscall.Stat_t).Ctim
	probe := p + ".probe"
	defer os.Remove(probe)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			tb.Fatal(err)
		}
		pi, err := os.Stat(probe)
		if err != nil {
			tb.Fatal(err)
		}
		if now := pi.Sys().(*syscall.Stat_t).Ctim; now.Nano() > before.Nano() {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatal("the filesystem's clock does not move")
		}
		time.Sleep(time.Millisecond)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(p, fi.Mode().Perm()); err != nil {
		tb.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		tb.Fatal(err)
	}
}

// sorted returns its arguments sorted.
func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}
