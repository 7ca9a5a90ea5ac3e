package nats_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
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

// TestConformanceSealed runs the suite on sealed depots whose content goes
// through the chunk stream in small chunks.
func TestConformanceSealed(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	kek := testKEK(t)
	storetest.RunAll(t, func(t *testing.T, cfg storetest.Config) store.Store {
		return openWith(t, c, cfg, fmt.Sprintf("t%d", depots.Add(1)), nats.Options{InlineBytes: 256, MaxChunkSize: 16 << 10, Key: kek})
	})
}

// sealMarker is plaintext the test looks for in the servers' files.
const sealMarker = "NATS-SEALED-MARKER-9e2b"

// countMarker counts sealMarker in every file of the cluster's servers.
func countMarker(t *testing.T, c *natstest.Cluster) int {
	t.Helper()
	n := 0
	for _, node := range c.Nodes {
		err := filepath.WalkDir(node.Dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			n += bytes.Count(b, []byte(sealMarker))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestSealedAtRest writes inline content, chunked content and a chunked
// upload to a depot: with a key, the servers' files never hold the
// plaintext (the control without a key does), a second host with the key
// reads everything back, and hosts without it or with another key are
// refused at Open, naming the key the depot wants.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := natstest.Start(t, 3)
			var kek seal.Wrapper
			if sealed {
				kek = testKEK(t)
			}
			opts := nats.Options{InlineBytes: 1024, MaxChunkSize: 16 << 10, Key: kek}
			s := openWith(t, c, storetest.Config{}, "d", opts)
			files := map[string][]byte{
				"/inline.txt": []byte(sealMarker + " small\n"),
				"/chunks.txt": bytes.Repeat([]byte(sealMarker+" large\n"), 3000),
			}
			for p, d := range files {
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: d}); err != nil {
					t.Fatal(err)
				}
			}
			up := bytes.Repeat([]byte(sealMarker+" upload\n"), 2000)
			files["/upload.txt"] = up
			half := len(up) / 2
			for i, part := range [][]byte{up[:half], up[half:]} {
				_, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: i, Count: 2, Data: part,
					File: store.PutRequest{Path: "/upload.txt", SHA256: storetest.Sum(up)}})
				if err != nil {
					t.Fatal(err)
				}
			}
			n := countMarker(t, c)
			if sealed && n != 0 {
				t.Fatalf("the servers' files hold the plaintext %d times", n)
			}
			if !sealed && n == 0 {
				t.Fatal("the control without a key does not show its plaintext: the test looks in the wrong place")
			}
			// Another host, with the same key, reads it all.
			s2 := openWith(t, c, storetest.Config{}, "d", opts)
			for p, want := range files {
				ct, err := s2.Open(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
				ct.Close()
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("%s on a second host: %d bytes, %v; want %d", p, len(got), err, len(want))
				}
			}
			if !sealed {
				o := opts
				o.Prefix, o.Key = "d", testKEK(t)
				if _, err := nats.Open(t.Context(), c.Connect(t), &o); !errors.Is(err, seal.ErrNotSealed) {
					t.Fatalf("a host with a key on a clear depot = %v; want ErrNotSealed", err)
				}
				return
			}
			other := testKEK(t)
			for _, c2 := range []struct {
				key   seal.Wrapper
				want  error
				names []string
			}{
				{nil, seal.ErrNoKey, []string{kek.(*seal.FileKey).KeyID()}},
				{other, seal.ErrWrongKey, []string{kek.(*seal.FileKey).KeyID(), other.KeyID()}},
			} {
				o := opts
				o.Prefix, o.Key = "d", c2.key
				st, err := nats.Open(t.Context(), c.Connect(t), &o)
				if err == nil {
					st.Close()
					t.Fatalf("a host with key %v opened the sealed depot", c2.key)
				}
				if !errors.Is(err, c2.want) {
					t.Fatalf("Open = %v; want %v", err, c2.want)
				}
				for _, name := range c2.names {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("Open = %v; want it to name %s", err, name)
					}
				}
			}
		})
	}
}
