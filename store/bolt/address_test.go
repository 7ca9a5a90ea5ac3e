package bolt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	bbolt "go.etcd.io/bbolt"
)

// sumsIn counts how often the plain SHA-256 of each of contents appears in
// the file at path, in hex and as raw bytes.
func sumsIn(t *testing.T, path string, contents ...[]byte) (hexN, rawN int) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range contents {
		sum := sha256.Sum256(c)
		hexN += bytes.Count(raw, []byte(hex.EncodeToString(sum[:])))
		rawN += bytes.Count(raw, sum[:])
	}
	return hexN, rawN
}

// TestKeyedAddresses: a sealed store names content by its keyed address,
// so no file's plain SHA-256 is in the file (in hex or raw) where the
// control without a key holds them, while everything agents do by the
// plain hash still works: two writes of equal content store one blob, a
// stream declaring a held hash stores nothing again, a wrong expected
// hash is refused, a placeholder keeps its declared hash, and replies
// carry the plain hash.
func TestKeyedAddresses(t *testing.T) {
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
			opts := &bolt.Options{ChunkSize: 64, Key: kek}
			s := openAt(t, path, opts)
			files := fillSealTest(t, s)
			same := bytes.Repeat([]byte("equal content "), 20)
			sum := sha256.Sum256(same)
			hexSum := hex.EncodeToString(sum[:])
			before, err := bolt.ReadStats(s)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"/eq1", "/eq2"} {
				res, err := s.Put(ctx, store.PutRequest{Path: p, Data: same, SHA256: hexSum})
				if err != nil || res.Entry.SHA256 != hexSum {
					t.Fatalf("Put %s = %+v, %v; want sha256 %s", p, res.Entry, err, hexSum)
				}
			}
			if _, err := s.PutStream(ctx, store.PutRequest{Path: "/eq3", SHA256: hexSum}, bytes.NewReader(same), int64(len(same))); err != nil {
				t.Fatal(err)
			}
			after, err := bolt.ReadStats(s)
			if err != nil {
				t.Fatal(err)
			}
			if after.Blobs != before.Blobs+1 || after.Chunks != before.Chunks+(len(same)+63)/64 {
				t.Fatalf("three writes of equal content: %+v → %+v; want one blob more", before, after)
			}
			if _, err := s.Put(ctx, store.PutRequest{Path: "/eq4", Data: same, SHA256: strings.Repeat("0", 64)}); !errors.Is(err, store.ErrHashMismatch) {
				t.Fatalf("Put with a wrong expected hash = %v; want ErrHashMismatch", err)
			}
			declared := []byte("content an agent will push later")
			dsum := sha256.Sum256(declared)
			dhex := hex.EncodeToString(dsum[:])
			if _, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{{Path: "/later", Kind: store.KindFile, Size: int64(len(declared)), SHA256: dhex}}}); err != nil {
				t.Fatal(err)
			}
			if e, err := s.Stat(ctx, "/later"); err != nil || e.Present || e.DeclaredSHA256 != dhex {
				t.Fatalf("placeholder = %+v, %v; want declared %s", e, err, dhex)
			}
			list, err := s.ReadDir(ctx, "/")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range list {
				if want := files[e.Path]; want != nil {
					if h := sha256.Sum256(want); e.SHA256 != hex.EncodeToString(h[:]) {
						t.Fatalf("listing: %s has sha256 %s; want the plain hash", e.Path, e.SHA256)
					}
				}
				if e.Path == "/later" && e.DeclaredSHA256 != dhex {
					t.Fatalf("listing: placeholder declared %q; want %s", e.DeclaredSHA256, dhex)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			contents := [][]byte{same, declared}
			for _, c := range files {
				contents = append(contents, c)
			}
			hexN, rawN := sumsIn(t, path, contents...)
			switch {
			case sealed && hexN+rawN != 0:
				t.Fatalf("the sealed file holds plain hashes: %d in hex, %d raw", hexN, rawN)
			case !sealed && (hexN == 0 || rawN == 0):
				t.Fatalf("the control without a key holds plain hashes %d times in hex, %d raw: the test looks in the wrong place", hexN, rawN)
			}

			s = openAt(t, path, opts)
			if _, err := s.Put(ctx, store.PutRequest{Path: "/later", Data: declared, SHA256: dhex}); err != nil {
				t.Fatal(err)
			}
			if e, err := s.Stat(ctx, "/eq2"); err != nil || e.SHA256 != hexSum {
				t.Fatalf("after reopening: %+v, %v; want sha256 %s", e, err, hexSum)
			}
			for _, p := range []string{"/eq1", "/eq2", "/eq3"} {
				if err := s.Remove(ctx, store.RemoveRequest{Path: p}); err != nil {
					t.Fatal(err)
				}
			}
			if st, err := bolt.ReadStats(s); err != nil || st.Blobs != before.Blobs+1 {
				t.Fatalf("after removing the equal files and pushing the declared one: %+v, %v; want %d blobs", st, err, before.Blobs+1)
			}
		})
	}
}

// TestPlainAddressedSealed: a depot sealed before keyed addresses (a
// version 1 seal record) keeps naming content by the plain hash: it
// opens, reads and writes as before. SealFile moves it to keyed
// addresses, stopped after every transaction and resumed, keeping its
// data key: then no plain hash is left, and every file reads as before,
// also after a reencryption.
func TestPlainAddressedSealed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "depot.db")
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	kek := testKEK(t)
	_, rec, err := seal.NewRecord(ctx, kek)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("meta")).Put([]byte("seal"), rec.Marshal()) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}

	opts := &bolt.Options{ChunkSize: 64, Key: kek}
	s, err = bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	files := fillSealTest(t, s)
	s.Close()
	var contents [][]byte
	for _, c := range files {
		contents = append(contents, c)
	}
	if _, r := sumsIn(t, path, contents...); r == 0 {
		t.Fatal("a version 1 sealed depot does not name content by its plain hash")
	}
	s, err = bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, s, files)
	s.Close()

	for runs := 0; ; runs++ {
		stopped, cancel := context.WithCancel(ctx)
		err := bolt.SealFileBatch(stopped, path, kek, 512, func(bolt.SealProgress) { cancel() })
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, context.Canceled) || runs > 1000 {
			t.Fatalf("SealFile run %d: %v", runs, err)
		}
	}
	if err := bolt.SealFile(ctx, path, kek, nil); !errors.Is(err, bolt.ErrAlreadySealed) {
		t.Fatalf("SealFile of a depot under keyed addresses = %v; want ErrAlreadySealed", err)
	}
	if _, err := bolt.Compact(path); err != nil {
		t.Fatal(err)
	}
	if h, r := sumsIn(t, path, contents...); h+r != 0 {
		t.Fatalf("after SealFile, the file holds plain hashes: %d in hex, %d raw", h, r)
	}
	s, err = bolt.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, s, files)
	in := bytes.Repeat([]byte(marker+strings.Repeat("x", 5)), 40)
	sum := sha256.Sum256(in)
	res, err := s.PutChunk(ctx, store.Chunk{UploadID: "u2", Index: 1, Count: 2, Data: in[len(in)/2:],
		File: store.PutRequest{Path: "/inprogress.txt", SHA256: hex.EncodeToString(sum[:])}})
	if err != nil || !res.Complete {
		t.Fatalf("completing the upload begun before: %+v, %v", res, err)
	}
	files["/inprogress.txt"] = in
	if err := bolt.Verify(s); err != nil {
		t.Fatal(err)
	}
	s.Close()

	next := testKEK(t)
	if _, err := bolt.Reencrypt(ctx, path, kek, next); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, &bolt.Options{ChunkSize: 64, Key: next})
	checkFiles(t, s, files)
}
