package bolt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
	bbolt "go.etcd.io/bbolt"
)

// testKEK returns a new key-encryption key.
func testKEK(t testing.TB) *seal.FileKey {
	t.Helper()
	k, err := seal.ParseKey(seal.NewKeyText())
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestConformanceSealed runs the suite on a sealed store with small chunks,
// so that every read opens several sealed chunks and crosses their
// boundaries.
func TestConformanceSealed(t *testing.T) {
	t.Parallel()
	storetest.RunAll(t, opener(bolt.Options{ChunkSize: 40, Key: testKEK(t)}))
}

// marker is plaintext the tests look for in the file.
const marker = "PLAINTEXT-MARKER-7f3a9c"

// fillSealTest writes marker-laden content to s in every way content
// reaches the chunks and uploads buckets: a Put, a batch, a stream, a
// completed chunked upload and one left in progress. It returns the files'
// contents by path.
func fillSealTest(t *testing.T, s *bolt.Store) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	body := func(n int) []byte { return bytes.Repeat([]byte(marker+strings.Repeat("x", n)), 40) }
	files := map[string][]byte{"/put.txt": body(1), "/batch.txt": body(2), "/stream.txt": body(3), "/chunked.txt": body(4)}
	if _, err := s.Put(ctx, store.PutRequest{Path: "/put.txt", Data: files["/put.txt"]}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutBatch(ctx, []store.PutRequest{{Path: "/batch.txt", Data: files["/batch.txt"]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutStream(ctx, store.PutRequest{Path: "/stream.txt"}, bytes.NewReader(files["/stream.txt"]), -1); err != nil {
		t.Fatal(err)
	}
	up := func(id, path string, data []byte, send int) {
		sum := sha256.Sum256(data)
		half := len(data) / 2
		parts := [][]byte{data[:half], data[half:]}
		for i := range send {
			_, err := s.PutChunk(ctx, store.Chunk{UploadID: id, Index: i, Count: 2, Data: parts[i],
				File: store.PutRequest{Path: path, SHA256: hex.EncodeToString(sum[:])}})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	up("u1", "/chunked.txt", files["/chunked.txt"], 2)
	up("u2", "/inprogress.txt", body(5), 1)
	return files
}

// TestSealedAtRest: with a key, none of the plaintext lands in the file
// (the control without a key finds it), a sealed store reopens with its
// key and reads every file back, and is refused without it or with
// another, naming the key it wants.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			t.Parallel()
			var kek seal.Wrapper
			if sealed {
				kek = testKEK(t)
			}
			path := filepath.Join(t.TempDir(), "depot.db")
			s, err := bolt.Open(path, &bolt.Options{ChunkSize: 64, Key: kek})
			if err != nil {
				t.Fatal(err)
			}
			files := fillSealTest(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(raw, []byte(marker))
			if sealed && n != 0 {
				t.Fatalf("the sealed file holds the plaintext %d times", n)
			}
			if !sealed && n == 0 {
				t.Fatal("the control without a key does not hold its plaintext: the test looks in the wrong place")
			}

			s = openAt(t, path, &bolt.Options{ChunkSize: 64, Key: kek})
			for p, want := range files {
				c, err := s.Open(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(io.NewSectionReader(c, 0, c.Size()))
				c.Close()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s after reopening: %d bytes, %v; want %d bytes", p, len(got), err, len(want))
				}
			}
		})
	}
}

// TestSealedKeyRefusals: a sealed store opened without its key, or with
// another, and a clear store opened with a key, are refused at Open with
// an error naming what was expected, and the file is left as it was.
func TestSealedKeyRefusals(t *testing.T) {
	t.Parallel()
	kek := testKEK(t)
	dir := t.TempDir()
	sealedPath, clearPath := filepath.Join(dir, "sealed.db"), filepath.Join(dir, "clear.db")
	for path, k := range map[string]seal.Wrapper{sealedPath: kek, clearPath: nil} {
		s, err := bolt.Open(path, &bolt.Options{Key: k})
		if err != nil {
			t.Fatal(err)
		}
		fillSealTest(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	other := testKEK(t)
	for _, c := range []struct {
		name, path string
		key        seal.Wrapper
		readOnly   bool
		want       error
		names      []string
	}{
		{"no key", sealedPath, nil, false, seal.ErrNoKey, []string{kek.KeyID(), "--key-file"}},
		{"no key, read-only", sealedPath, nil, true, seal.ErrNoKey, []string{kek.KeyID()}},
		{"another key", sealedPath, other, false, seal.ErrWrongKey, []string{kek.KeyID(), other.KeyID()}},
		{"a key for clear content", clearPath, kek, false, seal.ErrNotSealed, []string{"in the clear"}},
		{"a key for clear content, read-only", clearPath, kek, true, seal.ErrNotSealed, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := bolt.Open(c.path, &bolt.Options{Key: c.key, ReadOnly: c.readOnly})
			if err == nil {
				s.Close()
				t.Fatal("Open accepted it")
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("Open = %v; want %v", err, c.want)
			}
			for _, n := range c.names {
				if !strings.Contains(err.Error(), n) {
					t.Errorf("Open = %v; want it to name %q", err, n)
				}
			}
			after, err := os.ReadFile(c.path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the refused Open changed the file")
			}
		})
	}
	// A clear store that holds nothing yet takes a key and is sealed from
	// then on.
	emptyPath := filepath.Join(dir, "empty.db")
	s, err := bolt.Open(emptyPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openAt(t, emptyPath, &bolt.Options{Key: kek})
	if _, err := s.Put(context.Background(), store.PutRequest{Path: "/a", Data: []byte(marker)}); err != nil {
		t.Fatal(err)
	}
}

// TestSealedTampered: a flipped byte in a sealed chunk, or a chunk moved
// under another content's key, fails the read with seal.ErrTampered; no
// byte of it is returned.
func TestSealedTampered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek := testKEK(t)
	path := filepath.Join(t.TempDir(), "depot.db")
	s, err := bolt.Open(path, &bolt.Options{ChunkSize: 64, Key: kek})
	if err != nil {
		t.Fatal(err)
	}
	a, b := bytes.Repeat([]byte("a"), 200), bytes.Repeat([]byte("b"), 200)
	for p, d := range map[string][]byte{"/a": a, "/b": b} {
		if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: d}); err != nil {
			t.Fatal(err)
		}
	}
	ha, hb := bolt.ContentKey(s, sha256.Sum256(a)), bolt.ContentKey(s, sha256.Sum256(b))
	s.Close()
	key := func(h [32]byte, i byte) []byte { return append(h[:], 0, 0, 0, 0, 0, 0, 0, i) }
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		chunks := tx.Bucket([]byte("chunks"))
		v := bytes.Clone(chunks.Get(key(ha, 1)))
		if v == nil {
			return errors.New("chunk 1 of /a is not where the test expects it")
		}
		v[len(v)/2] ^= 1
		if err := chunks.Put(key(ha, 1), v); err != nil {
			return err
		}
		// Chunk 0 of /b replaced by chunk 0 of /a: sealed, but for
		// another place.
		return chunks.Put(key(hb, 0), bytes.Clone(chunks.Get(key(ha, 0))))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}

	// Not openAt: its invariant check would report the damage done here.
	var logs syncBuffer
	s, err = bolt.Open(path, &bolt.Options{ChunkSize: 64, Key: kek, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, c := range []struct {
		path string
		off  int64
	}{{"/a", 64}, {"/a", 100}, {"/b", 0}} {
		ct, err := s.Open(ctx, c.path)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 10)
		n, err := ct.ReadAt(buf, c.off)
		ct.Close()
		if !errors.Is(err, seal.ErrTampered) || n != 0 {
			t.Errorf("%s at %d: ReadAt = %d, %v; want 0, ErrTampered", c.path, c.off, n, err)
		}
	}
	// Three failed reads of two damaged chunks: counted three times,
	// logged once each.
	if n := s.TamperedChunks(); n != 3 {
		t.Errorf("TamperedChunks = %d; want 3", n)
	}
	if n := strings.Count(logs.String(), `msg="sealed content failed authentication`); n != 2 {
		t.Errorf("%d log lines about the damaged chunks; want 2, one each:\n%s", n, logs.String())
	}
	// The chunks left alone still read.
	ct, err := s.Open(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	defer ct.Close()
	buf := make([]byte, 64)
	if n, err := ct.ReadAt(buf, 0); n != 64 || err != nil || !bytes.Equal(buf, a[:64]) {
		t.Fatalf("untouched chunk 0 of /a: %d, %v", n, err)
	}
}

// TestRekey rotates the key-encryption key: the store opens with the new
// key and reads what it held, the old key is refused, and a rotation with a
// key that is not the current one, or of a clear store, changes nothing.
func TestRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path, clearPath := filepath.Join(dir, "depot.db"), filepath.Join(dir, "clear.db")
	cur, next, stranger := testKEK(t), testKEK(t), testKEK(t)
	s, err := bolt.Open(path, &bolt.Options{Key: cur})
	if err != nil {
		t.Fatal(err)
	}
	files := fillSealTest(t, s)
	s.Close()
	c, err := bolt.Open(clearPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()

	unchanged := func(p string, do func() error, want error) {
		t.Helper()
		before, _ := os.ReadFile(p)
		if err := do(); !errors.Is(err, want) {
			t.Fatalf("Rekey = %v; want %v", err, want)
		}
		if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
			t.Fatal("a refused Rekey changed the file")
		}
	}
	unchanged(path, func() error { _, err := bolt.Rekey(ctx, path, stranger, next); return err }, seal.ErrWrongKey)
	unchanged(clearPath, func() error { _, err := bolt.Rekey(ctx, clearPath, cur, next); return err }, seal.ErrNotSealed)

	r, err := bolt.Rekey(ctx, path, cur, next)
	if err != nil {
		t.Fatal(err)
	}
	if r.KEKID != next.KeyID() {
		t.Fatalf("rekeyed record names key %s; want %s", r.KEKID, next.KeyID())
	}
	if _, err := bolt.Open(path, &bolt.Options{Key: cur}); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("Open with the old key after rotation = %v; want ErrWrongKey", err)
	}
	s = openAt(t, path, &bolt.Options{Key: next})
	for p, want := range files {
		ct, err := s.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
		ct.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after rotation: %d bytes, %v", p, len(got), err)
		}
	}
}

// TestSealFileResumed seals a depot written in the clear, stopping after
// its first transaction as a kill would: the part-sealed file is refused
// by Open, and sealing again with another key is refused; sealing again
// with the key finishes it, and after a compaction the file holds no
// plaintext while every file reads back identical and the upload left in
// progress completes.
func TestSealFileResumed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "depot.db")
	s, err := bolt.Open(path, &bolt.Options{ChunkSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	files := fillSealTest(t, s)
	// A version, a snapshot and a placeholder, so that every bucket that
	// names content has something to rename.
	if _, err := s.Put(ctx, store.PutRequest{Path: "/put.txt", Data: []byte("second version")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s1", Prefix: "/"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/later", Kind: store.KindFile, Size: 3, SHA256: strings.Repeat("ab", 32)}}}); err != nil {
		t.Fatal(err)
	}
	files["/put.txt"] = []byte("second version")
	entries := func(s *bolt.Store) string {
		t.Helper()
		var b strings.Builder
		for _, p := range []string{"/put.txt", "/batch.txt", "/stream.txt", "/chunked.txt", "/later"} {
			h, err := s.History(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range h {
				fmt.Fprintf(&b, "%s %d %s %s %v %d\n", e.Path, e.Size, e.SHA256, e.DeclaredSHA256, e.Present, e.Revision)
			}
		}
		return b.String()
	}
	want := entries(s)
	s.Close()
	kek := testKEK(t)

	stopped, cancel := context.WithCancel(ctx)
	calls := 0
	err = bolt.SealFileBatch(stopped, path, kek, 512, func(p bolt.SealProgress) {
		calls++
		if p.Done == 0 || p.Done >= p.Total {
			t.Errorf("progress after the first transaction: %+v", p)
		}
		cancel()
	})
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Fatalf("SealFile stopped after one transaction = %v after %d; want context.Canceled after 1", err, calls)
	}
	for _, k := range []seal.Wrapper{nil, kek} {
		if _, err := bolt.Open(path, &bolt.Options{Key: k}); !errors.Is(err, bolt.ErrSealing) {
			t.Fatalf("Open of a part-sealed file with key %v = %v; want ErrSealing", k, err)
		}
	}
	if err := bolt.SealFile(ctx, path, testKEK(t), nil); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("SealFile resumed with another key = %v; want ErrWrongKey", err)
	}
	// Stopped after every transaction, and resumed, until it finishes.
	var last bolt.SealProgress
	for runs := 0; ; runs++ {
		stopped, cancel := context.WithCancel(ctx)
		err := bolt.SealFileBatch(stopped, path, kek, 512, func(p bolt.SealProgress) { last = p; cancel() })
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) || runs > 1000 {
			t.Fatalf("SealFile run %d: %v", runs, err)
		}
	}
	if last.Done != last.Total || last.Total == 0 {
		t.Fatalf("last progress %+v; want every chunk done", last)
	}
	if err := bolt.SealFile(ctx, path, kek, nil); !errors.Is(err, bolt.ErrAlreadySealed) {
		t.Fatalf("SealFile of a sealed depot = %v", err)
	}
	if _, err := bolt.Compact(path); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte(marker)); n != 0 {
		t.Fatalf("the sealed, compacted file holds the plaintext %d times", n)
	}
	contents := [][]byte{bytes.Repeat([]byte(marker+strings.Repeat("x", 5)), 40)}
	for _, c := range files {
		contents = append(contents, c)
	}
	if h, r := sumsIn(t, path, contents...); h+r != 0 {
		t.Fatalf("the sealed, compacted file holds plain hashes: %d in hex, %d raw", h, r)
	}

	s = openAt(t, path, &bolt.Options{ChunkSize: 64, Key: kek})
	if got := entries(s); got != want {
		t.Fatalf("entries after sealing:\n%s\nbefore:\n%s", got, want)
	}
	for p, want := range files {
		ct, err := s.Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
		ct.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s after sealing: %d bytes, %v; want %d", p, len(got), err, len(want))
		}
	}
	// The upload left in progress before sealing completes with its
	// second half: its first, sealed meanwhile, still reads.
	in := bytes.Repeat([]byte(marker+strings.Repeat("x", 5)), 40)
	sum := sha256.Sum256(in)
	res, err := s.PutChunk(ctx, store.Chunk{UploadID: "u2", Index: 1, Count: 2, Data: in[len(in)/2:],
		File: store.PutRequest{Path: "/inprogress.txt", SHA256: hex.EncodeToString(sum[:])}})
	if err != nil || !res.Complete {
		t.Fatalf("completing the upload begun before sealing: %+v, %v", res, err)
	}
}

// syncBuffer is a bytes.Buffer that a store's logger may write to from
// its goroutines while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
