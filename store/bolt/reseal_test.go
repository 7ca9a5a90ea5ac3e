package bolt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	bbolt "go.etcd.io/bbolt"
)

// TestReencryptUnderWriters reencrypts a sealed store under a new data key
// while 8 writers write to it, with a restart in the middle: nothing
// written before or during it is lost, the resealer finishes after the
// restart, and then the store opens and reads everything with the new
// data key alone (a chunk left under the previous one would fail to read).
// A second reencryption while one is in progress, and one with a key that
// is not the depot's, are refused and change nothing.
func TestReencryptUnderWriters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "depot.db")
	cur, next := testKEK(t), testKEK(t)
	opts := bolt.Options{ChunkSize: 64, Key: cur}
	s, err := bolt.Open(path, &opts)
	if err != nil {
		t.Fatal(err)
	}
	want := fillSealTest(t, s)
	for i := range 150 {
		p := fmt.Sprintf("/before/%03d", i)
		want[p] = bytes.Repeat([]byte(fmt.Sprintf("%s before %d;", marker, i)), 10)
		if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: want[p]}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	unchanged := func(do func() error, wantErr error) {
		t.Helper()
		before, _ := os.ReadFile(path)
		if err := do(); !errors.Is(err, wantErr) {
			t.Fatalf("Reencrypt = %v; want %v", err, wantErr)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
			t.Fatal("a refused Reencrypt changed the file")
		}
	}
	unchanged(func() error { _, err := bolt.Reencrypt(ctx, path, next, next); return err }, seal.ErrWrongKey)
	r, err := bolt.Reencrypt(ctx, path, cur, next)
	if err != nil {
		t.Fatal(err)
	}
	if r.KEKID != next.KeyID() {
		t.Fatalf("new data key wrapped by %s; want %s", r.KEKID, next.KeyID())
	}
	unchanged(func() error { _, err := bolt.Reencrypt(ctx, path, next, next); return err }, bolt.ErrResealing)
	if _, err := bolt.Open(path, &opts); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("Open with the previous key-encryption key = %v; want ErrWrongKey", err)
	}

	// About 100 KiB of sealed chunks to reseal at 2 KiB/s in the first
	// run, in batches of 256 bytes: it is stopped long before it is done;
	// the second, at 1 MiB/s, finishes in a moment.
	opts = bolt.Options{ChunkSize: 64, Key: next, ResealRate: 2 << 10}
	var mu sync.Mutex
	write := func(s *bolt.Store, round int) {
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 10 {
					p := fmt.Sprintf("/w%d/r%d-%02d", w, round, i)
					data := bytes.Repeat([]byte(fmt.Sprintf("%s writer %d round %d file %d;", marker, w, round, i)), 6)
					if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: data}); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					// An overwrite of a file written before the
					// reencryption: its old content may be resealed
					// at the same moment.
					old := fmt.Sprintf("/before/%03d", (w*10+i)%150)
					if _, err := s.Put(ctx, store.PutRequest{Path: old, Data: data}); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
					mu.Lock()
					want[p], want[old] = data, data
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	s, err = bolt.Open(path, &opts)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Resealing() {
		t.Fatal("Open after Reencrypt is not resealing")
	}
	write(s, 0)
	checkFiles(t, s, want)
	if !s.Resealing() {
		t.Fatal("the resealer finished before the restart: the test does not stop it halfway")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	opts.ResealRate = 1 << 20
	s = openAt(t, path, &opts)
	if !s.Resealing() {
		t.Fatal("the restarted store does not go on resealing")
	}
	write(s, 1)
	deadline := time.Now().Add(30 * time.Second)
	for s.Resealing() {
		if time.Now().After(deadline) {
			t.Fatal("the resealer did not finish within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	checkFiles(t, s, want)
	if n := s.TamperedChunks(); n != 0 {
		t.Fatalf("%d chunks failed to open during the reencryption", n)
	}
	s.Close()

	// Reopened, the store knows only the new data key.
	s = openAt(t, path, &opts)
	if s.Resealing() {
		t.Fatal("the store still resealing after the resealer finished")
	}
	checkFiles(t, s, want)
	sum := sha256.Sum256(bytes.Repeat([]byte(marker+strings.Repeat("x", 5)), 40))
	in := bytes.Repeat([]byte(marker+strings.Repeat("x", 5)), 40)
	res, err := s.PutChunk(ctx, store.Chunk{UploadID: "u2", Index: 1, Count: 2, Data: in[len(in)/2:],
		File: store.PutRequest{Path: "/inprogress.txt", SHA256: hex.EncodeToString(sum[:])}})
	if err != nil || !res.Complete {
		t.Fatalf("completing the upload begun before the reencryption: %+v, %v", res, err)
	}
	if n := s.TamperedChunks(); n != 0 {
		t.Fatalf("%d chunks failed to open with the new data key alone", n)
	}
}

// checkFiles fails t unless every file in want reads back as it is.
func checkFiles(t *testing.T, s *bolt.Store, want map[string][]byte) {
	t.Helper()
	for p, w := range want {
		if got := readAll(t, s, p); !bytes.Equal(got, w) {
			t.Fatalf("%s: %q; want %q", p, got, w)
		}
	}
}

// TestReencryptFinishUnderReader: a chunk as a read transaction saw it
// before the resealer's last commit (sealed under the previous data key)
// still opens after that commit: the previous data key is gone from the
// file, not from the running store, whose readers may hold older views.
func TestReencryptFinishUnderReader(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kek := testKEK(t)
	path := filepath.Join(t.TempDir(), "depot.db")
	s, err := bolt.Open(path, &bolt.Options{Key: kek})
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("resealed under a reader")
	if _, err := s.Put(ctx, store.PutRequest{Path: "/a", Data: data}); err != nil {
		t.Fatal(err)
	}
	h := bolt.ContentKey(s, sha256.Sum256(data))
	s.Close()
	if _, err := bolt.Reencrypt(ctx, path, kek, kek); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	var old []byte
	err = db.View(func(tx *bbolt.Tx) error {
		old = bytes.Clone(tx.Bucket([]byte("chunks")).Get(append(h[:], 0, 0, 0, 0, 0, 0, 0, 0)))
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil || old == nil {
		t.Fatalf("reading the chunk before the reencryption: %v, %d bytes", err, len(old))
	}
	s = openAt(t, path, &bolt.Options{Key: kek})
	for deadline := time.Now().Add(time.Minute); s.Resealing(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the reencryption did not finish within a minute")
		}
	}
	if err := bolt.OpenChunk(s, h, 0, old); err != nil {
		t.Fatalf("a chunk read before the reencryption finished, opened after: %v", err)
	}
}
