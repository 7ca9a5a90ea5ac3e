package blobcache_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/vfs/internal/blobcache"
)

// src is an in-memory Source.
type src struct {
	*bytes.Reader
	sum string
}

func (s src) SHA256() string { return s.sum }

func newSrc(b []byte) src {
	h := sha256.Sum256(b)
	return src{bytes.NewReader(b), hex.EncodeToString(h[:])}
}

func readAll(t *testing.T, f *os.File) []byte {
	t.Helper()
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFillGetEvictRemove(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "keep.txt")
	stale := filepath.Join(dir, hex.EncodeToString(make([]byte, 32)))
	for _, p := range []string{other, stale} {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := blobcache.Open(dir, 250, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // the sealer stops before the directory goes
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a blob left by an earlier run survived Open: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("Open deleted a file that is not a blob: %v", err)
	}
	a, b, d := newSrc(bytes.Repeat([]byte("a"), 100)), newSrc(bytes.Repeat([]byte("b"), 100)), newSrc(bytes.Repeat([]byte("d"), 100))
	ctx := context.Background()
	for i, s := range []src{a, b} {
		f, err := c.Fill(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, f); !bytes.Equal(got, bytes.Repeat([]byte{"ab"[i]}, 100)) {
			t.Fatalf("filled blob reads %q", got)
		}
	}
	if f, ok := c.Get(a.sum); !ok {
		t.Fatal("a is not cached")
	} else {
		f.Close() // a is now more recently used than b
	}
	if _, err := c.Fill(ctx, d); err != nil {
		t.Fatal(err)
	}
	if c.Has(b.sum) || !c.Has(a.sum) || !c.Has(d.sum) || c.Used() != 200 {
		t.Errorf("after filling past the bound: a %v b %v d %v, used %d; want b (least recently used) evicted",
			c.Has(a.sum), c.Has(b.sum), c.Has(d.sum), c.Used())
	}
	c.Remove(a.sum)
	if _, ok := c.Get(a.sum); ok || c.Used() != 100 {
		t.Errorf("a still cached after Remove (used %d)", c.Used())
	}
	if _, err := os.Stat(filepath.Join(dir, a.sum)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a's file survived Remove: %v", err)
	}
	if _, err := c.Fill(ctx, newSrc(make([]byte, 300))); !errors.Is(err, blobcache.ErrTooLarge) {
		t.Errorf("filling a blob larger than the cache: %v, want ErrTooLarge", err)
	}
}

func TestFillRejectsWrongContent(t *testing.T) {
	c, err := blobcache.Open(t.TempDir(), 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // the sealer stops before the directory goes
	s := newSrc([]byte("right"))
	s.Reader = bytes.NewReader([]byte("wrong"))
	if _, err := c.Fill(context.Background(), s); !errors.Is(err, blobcache.ErrCorrupt) {
		t.Fatalf("Fill of bytes that do not match their hash: %v, want ErrCorrupt", err)
	}
	if c.Has(s.sum) || c.Used() != 0 {
		t.Error("corrupt content was cached")
	}
	des, _ := os.ReadDir(c.Dir())
	if len(des) != 0 {
		t.Errorf("a failed fill left %d files", len(des))
	}
}

func TestConcurrentFillsWriteOnce(t *testing.T) {
	c, err := blobcache.Open(t.TempDir(), 1<<30, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() }) // the sealer stops before the directory goes
	data := bytes.Repeat([]byte("0123456789"), 300_000)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := c.Fill(context.Background(), newSrc(data))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			got, err := io.ReadAll(f)
			if err == nil && !bytes.Equal(got, data) {
				err = errors.New("a concurrent fill reads wrong bytes")
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if c.Used() != int64(len(data)) {
		t.Errorf("used %d after 16 fills of one %d-byte blob", c.Used(), len(data))
	}
}
