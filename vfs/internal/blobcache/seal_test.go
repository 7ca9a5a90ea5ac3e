package blobcache_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// fillClose opens a cache on dir, fills it with srcs and closes it, which
// seals every blob.
func fillClose(t *testing.T, dir string, srcs ...src) {
	t.Helper()
	c, err := blobcache.Open(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range srcs {
		f, err := c.Fill(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// names lists dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// TestOpenKeepsSealedBlobs checks what a second Open keeps of a first
// one's blobs: the ones unchanged since sealed, and nothing else.
func TestOpenKeepsSealedBlobs(t *testing.T) {
	dir := t.TempDir()
	kept, unsealed, truncated, replaced, lonely := newSrc([]byte("kept")), newSrc([]byte("unsealed")),
		newSrc([]byte("truncated")), newSrc([]byte("replaced")), newSrc([]byte("lonely"))
	fillClose(t, dir, kept, unsealed, truncated, replaced, lonely)
	p := func(s src) string { return filepath.Join(dir, s.sum) }
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// A process that died before sealing; a file cut short; a blob file
	// replaced by a symbolic link to a file with the right bytes; a seal
	// whose blob is gone; an unfinished fill.
	mustDo(os.Remove(p(unsealed) + ".seal"))
	mustDo(os.Truncate(p(truncated), 3))
	mustDo(os.WriteFile(filepath.Join(dir, "elsewhere"), []byte("replaced"), 0o400))
	mustDo(os.Remove(p(replaced)))
	mustDo(os.Symlink("elsewhere", p(replaced)))
	mustDo(os.Remove(p(lonely)))
	mustDo(os.WriteFile(filepath.Join(dir, ".fill-123"), []byte("part"), 0o600))

	c, err := blobcache.Open(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Stats()
	if s.Kept != 1 || s.Blobs != 1 || s.Bytes != 4 || s.Dropped != 4 {
		t.Errorf("stats after reopening %+v; want 1 blob (4 bytes) kept, 4 dropped (3 blobs and the unfinished fill)", s)
	}
	if got, want := names(t, dir), []string{kept.sum, kept.sum + ".seal", "elsewhere"}; !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("directory after reopening: %v, want %v", got, want)
	}
	f, ok := c.Get(kept.sum)
	if !ok {
		t.Fatal("the sealed blob is not served")
	}
	if got := readAll(t, f); !bytes.Equal(got, []byte("kept")) {
		t.Errorf("the kept blob reads %q", got)
	}
	for _, s := range []src{unsealed, truncated, replaced, lonely} {
		if c.Has(s.sum) {
			t.Errorf("blob %s was kept", s.sum)
		}
	}
	if s := c.Stats(); s.Fills != 0 || s.Hits != 1 {
		t.Errorf("after one Get: %d fills, %d hits", s.Fills, s.Hits)
	}
}

// TestRetain checks that Retain deletes only the kept blobs the store does
// not hold and nobody asked for since Open.
func TestRetain(t *testing.T) {
	dir := t.TempDir()
	asked, held, gone := newSrc([]byte("asked")), newSrc([]byte("held")), newSrc([]byte("gone"))
	fillClose(t, dir, asked, held, gone)
	c, err := blobcache.Open(dir, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f, ok := c.Get(asked.sum)
	if !ok {
		t.Fatal("not kept")
	}
	f.Close()
	fresh := newSrc([]byte("filled since Open"))
	if f, err = c.Fill(context.Background(), fresh); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := c.Retain(func(sum string) bool { return sum == held.sum }); n != 1 {
		t.Errorf("Retain deleted %d blobs, want 1", n)
	}
	if !c.Has(asked.sum) || !c.Has(held.sum) || !c.Has(fresh.sum) || c.Has(gone.sum) {
		t.Errorf("after Retain: asked %v, held %v, fresh %v, gone %v; want only gone deleted",
			c.Has(asked.sum), c.Has(held.sum), c.Has(fresh.sum), c.Has(gone.sum))
	}
	if _, err := os.Stat(filepath.Join(dir, gone.sum+".seal")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the deleted blob's seal is still there: %v", err)
	}
	if s := c.Stats(); s.Pruned != 1 {
		t.Errorf("Pruned %d, want 1", s.Pruned)
	}
}

// TestOpenKeepsWithinBound checks that blobs kept beyond a smaller bound
// are deleted, least recently filled first.
func TestOpenKeepsWithinBound(t *testing.T) {
	dir := t.TempDir()
	old, recent := newSrc(bytes.Repeat([]byte("o"), 100)), newSrc(bytes.Repeat([]byte("r"), 100))
	fillClose(t, dir, old)
	waitTick(t, filepath.Join(dir, old.sum))
	fillClose(t, dir, recent)
	c, err := blobcache.Open(dir, 150, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Has(old.sum) || !c.Has(recent.sum) || c.Used() != 100 {
		t.Errorf("reopened with room for one: old %v, recent %v, used %d; want only the recent one", c.Has(old.sum), c.Has(recent.sum), c.Used())
	}
	if _, err := os.Stat(filepath.Join(dir, old.sum)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the blob beyond the bound is still on disk: %v", err)
	}
}

// waitTick waits until a file written now gets a later modification time
// than the file at p: where timestamps are coarse, files written in a row
// may share one.
func waitTick(t *testing.T, p string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	probe := p + ".probe"
	defer os.Remove(probe)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		pi, err := os.Stat(probe)
		if err != nil {
			t.Fatal(err)
		}
		if pi.ModTime().After(fi.ModTime()) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the filesystem's clock does not move")
		}
		time.Sleep(time.Millisecond)
	}
}

// sorted returns a sorted copy of s.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
