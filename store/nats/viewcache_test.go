package nats_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/store/storetest/pastcheck"
	"github.com/nats-io/nats.go/jetstream"
)

// viewCacheHost opens a host of depot prefix in c keeping its view cache
// in file ("" for none), with the options every host of these tests
// shares.
func viewCacheHost(t *testing.T, c *natstest.Cluster, prefix, file string) *nats.Store {
	t.Helper()
	return openWith(t, c, storetest.Config{KeepVersions: 2}, prefix, nats.Options{ViewCache: file, InlineBytes: 1 << 10}).(*nats.Store)
}

// TestViewCacheAfterKill: a host killed after writing its view cache at
// sequence R, restarted while the other hosts wrote (overwrites, removals
// of files and trees it had, moves, snapshots taken and deleted, an
// upload completed), loads the file and reads only what followed R, and
// then shows what a host that read the whole bucket shows: every entry,
// each path's history, the snapshots, the counts and the change log.
func TestViewCacheAfterKill(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ctx, ok := t.Context(), must(t)
	prefix := fmt.Sprintf("vc%d", depots.Add(1))
	file := filepath.Join(t.TempDir(), "view")
	w := viewCacheHost(t, c, prefix, "")
	a := viewCacheHost(t, c, prefix, file)
	put := func(p, data string) {
		t.Helper()
		if _, err := w.Put(ctx, store.PutRequest{Path: p, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	var reqs []store.PutRequest
	for d := range 5 {
		for f := range 20 {
			reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/a/d%d/f%02d", d, f), Data: fmt.Appendf(nil, "%d/%d", d, f)})
		}
	}
	if _, err := w.PutBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	put("/a/d0/f00", "second")
	put("/a/d0/f00", "third")
	put("/big", strings.Repeat("b", 5000)) // stored as chunks
	ok(w.Move(ctx, store.MoveRequest{From: "/a/d1", To: "/b/d1"}))
	ok(nil, w.Remove(ctx, store.RemoveRequest{Path: "/a/d2", Recursive: true}))
	ok(w.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s1"}))
	whole := sha256.Sum256([]byte("first half second half"))
	upload := store.Chunk{UploadID: "up1", Index: 0, Count: 2, Data: []byte("first half "),
		File: store.PutRequest{Path: "/up", SHA256: hex.EncodeToString(whole[:])}}
	ok(w.PutChunk(ctx, upload))

	ok(nil, a.Sync(ctx))
	// Killed: what it wrote on closing is lost, the file at R stays,
	// and so does the temporary file of a write it was killed in.
	r, saved := killAfterViewCache(t, a, file)
	if err := os.WriteFile(file+".tmp123", saved[:len(saved)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	put("/a/d0/f01", "after")
	put("/a/d0/f00", "fourth")
	ok(nil, w.Remove(ctx, store.RemoveRequest{Path: "/a/d0/f02"}))
	ok(nil, w.Remove(ctx, store.RemoveRequest{Path: "/a/d3", Recursive: true}))
	ok(w.Move(ctx, store.MoveRequest{From: "/a/d4/f00", To: "/c/moved"}))
	ok(nil, w.DeleteSnapshot(ctx, "s1"))
	ok(w.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s2", Prefix: "/a"}))
	ok(nil, w.Remove(ctx, store.RemoveRequest{Path: "/big"}))
	put("/new/file", "new")
	upload.Index, upload.Data = 1, []byte("second half")
	ok(w.PutChunk(ctx, upload))

	restarted := viewCacheHost(t, c, prefix, file)
	if got := nats.ViewCacheLoaded(restarted); got != r {
		t.Fatalf("the restarted host loaded its view cache at %d, want %d", got, r)
	}
	if _, err := os.Stat(file + ".tmp123"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary file of a killed write is left: %v", err)
	}
	full := viewCacheHost(t, c, prefix, "")
	if got := nats.ViewCacheLoaded(full); got != 0 {
		t.Fatalf("a host without a view cache loaded one at %d", got)
	}
	sameView(t, restarted, full, []string{"/a/d0/f00", "/a/d0/f02", "/a/d3/f05", "/big", "/c/moved", "/up"})
}

// must returns a function that fails t on its error, whatever the call
// returned besides: must(t)(s.Move(...)).
func must(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// sameView fails t unless hosts a and b show the same tree, the same
// histories of paths, snapshots, counts and change log.
func sameView(t *testing.T, a, b *nats.Store, paths []string) {
	t.Helper()
	ctx, ok := t.Context(), must(t)
	ok(nil, a.Sync(ctx))
	ok(nil, b.Sync(ctx))
	var walk func(dir string)
	walk = func(dir string) {
		ea, erra := a.ReadDir(ctx, dir)
		eb, errb := b.ReadDir(ctx, dir)
		if erra != nil || errb != nil {
			t.Fatalf("ReadDir %s: %v, %v", dir, erra, errb)
		}
		if !reflect.DeepEqual(ea, eb) {
			t.Errorf("ReadDir %s:\n%+v\nwant (the full read's)\n%+v", dir, ea, eb)
			return
		}
		for _, e := range ea {
			if e.IsDir() {
				walk(e.Path)
			}
		}
	}
	walk("/")
	for _, p := range paths {
		ha, erra := a.History(ctx, p)
		hb, errb := b.History(ctx, p)
		if !errors.Is(erra, errb) && (erra == nil || errb == nil || erra.Error() != errb.Error()) || !reflect.DeepEqual(ha, hb) {
			t.Errorf("History %s: %+v, %v; want %+v, %v", p, ha, erra, hb, errb)
		}
	}
	sa, erra := a.Snapshots(ctx)
	sb, errb := b.Snapshots(ctx)
	if erra != nil || errb != nil || !reflect.DeepEqual(sa, sb) {
		t.Errorf("Snapshots: %+v, %v; want %+v, %v", sa, erra, sb, errb)
	}
	for _, sn := range sb {
		da, erra := a.ReadDirAt(ctx, sn.Prefix, sn.Revision)
		db, errb := b.ReadDirAt(ctx, sn.Prefix, sn.Revision)
		if erra != nil || errb != nil || !reflect.DeepEqual(da, db) {
			t.Errorf("ReadDirAt %s at %d: %+v, %v; want %+v, %v", sn.Prefix, sn.Revision, da, erra, db, errb)
		}
	}
	ta, erra := a.Stats(ctx)
	tb, errb := b.Stats(ctx)
	ta.Hits, ta.Misses, tb.Hits, tb.Misses = 0, 0, 0, 0
	if erra != nil || errb != nil || ta != tb {
		t.Errorf("Stats: %+v, %v; want %+v, %v", ta, erra, tb, errb)
	}
	ca, erra := a.Changes(ctx, "/", 0, 1<<20)
	cb, errb := b.Changes(ctx, "/", 0, 1<<20)
	if erra != nil || errb != nil || !reflect.DeepEqual(ca, cb) {
		t.Errorf("Changes: %+v, %v; want %+v, %v", ca, erra, cb, errb)
	}
	for _, p := range paths {
		if e, err := b.Stat(ctx, p); err == nil && e.Kind == store.KindFile {
			if ga, gb := read(t, a, p), read(t, b, p); !bytes.Equal(ga, gb) {
				t.Errorf("%s reads %q, want %q", p, ga, gb)
			}
		}
	}
}

// read returns the content of the file at p in s.
func read(t *testing.T, s store.Store, p string) []byte {
	t.Helper()
	c, err := s.Open(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, c.Size())
	if _, err := c.ReadAt(buf, 0); err != nil && c.Size() > 0 {
		t.Fatalf("reading %s: %v", p, err)
	}
	return buf
}

// TestViewCacheNotUsed: a view cache file that cannot be trusted or does
// not describe the cluster's stream is ignored, and the host reads the
// whole tree: a torn file, another format's, one taken of a depot made
// again under the prefix, and one whose stream no longer holds what
// followed it (purged up to past its sequence).
func TestViewCacheNotUsed(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	cases := []struct {
		name string
		// spoil changes the file, or the cluster, once the host that
		// wrote the file closed.
		spoil func(t *testing.T, file, prefix string, r uint64)
	}{
		{"Torn", func(t *testing.T, file, _ string, _ uint64) {
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(file, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"Flipped", func(t *testing.T, file, _ string, _ uint64) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x40
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"OtherFormat", func(t *testing.T, file, _ string, _ uint64) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			b = bytes.Replace(b, []byte("view cache 1\n"), []byte("view cache 0\n"), 1)
			n := len(b) - crc32.Size
			binary.BigEndian.PutUint32(b[n:], crc32.Checksum(b[:n], crc32.MakeTable(crc32.Castagnoli)))
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"Purged", func(t *testing.T, _, prefix string, r uint64) {
			tree := treeOf(t, c, prefix)
			if err := tree.Purge(t.Context(), jetstream.WithPurgeSequence(r+3)); err != nil {
				t.Fatal(err)
			}
		}},
		{"DepotMadeAgain", func(t *testing.T, _, prefix string, _ uint64) {
			js, err := jetstream.New(c.Connect(t))
			if err != nil {
				t.Fatal(err)
			}
			if err := js.DeleteStream(t.Context(), treeStream(prefix)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, ok := t.Context(), must(t)
			prefix := fmt.Sprintf("vc%d", depots.Add(1))
			file := filepath.Join(t.TempDir(), "view")
			a := viewCacheHost(t, c, prefix, file)
			for i := range 10 {
				ok(a.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%d", i), Data: []byte("x")}))
			}
			r, _ := killAfterViewCache(t, a, file)
			w := viewCacheHost(t, c, prefix, "")
			for i := range 5 {
				ok(w.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/g%d", i), Data: fmt.Appendf(nil, "y%d", i)}))
			}
			tc.spoil(t, file, prefix, r)
			if tc.name == "DepotMadeAgain" {
				w = viewCacheHost(t, c, prefix, "")
				ok(w.Put(ctx, store.PutRequest{Path: "/other", Data: []byte("z")}))
			}
			restarted := viewCacheHost(t, c, prefix, file)
			if got := nats.ViewCacheLoaded(restarted); got != 0 {
				t.Fatalf("the host loaded its view cache at %d", got)
			}
			sameView(t, restarted, viewCacheHost(t, c, prefix, ""), []string{"/f1", "/g4", "/other"})
		})
	}
}

// killAfterViewCache writes a's view cache to file, then closes a as if
// it were killed there: the file keeps what was written before the close,
// not what the close wrote. It returns the file's sequence and bytes.
func killAfterViewCache(t *testing.T, a *nats.Store, file string) (uint64, []byte) {
	t.Helper()
	r, err := nats.WriteViewCache(a)
	if err != nil || r == 0 {
		t.Fatalf("writing the view cache: sequence %d, %v", r, err)
	}
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	if err := os.WriteFile(file, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	return r, saved
}

// treeOf returns the tree stream of depot prefix in c.
func treeOf(t *testing.T, c *natstest.Cluster, prefix string) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), treeStream(prefix))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestViewCachePastAgainstModel runs the model-based checker of the past
// (pastcheck) on a writing host that keeps a view cache: its restarts load
// the file its close wrote, and every read after it is compared with the
// model. A restart may read the whole tree instead when the cluster does
// not answer for longer than the store's timeout (the checker's faults
// can coincide with it), so the test asks that restarts loaded the file,
// not each one.
func TestViewCachePastAgainstModel(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	file := filepath.Join(t.TempDir(), "view")
	s, cfg := pastConfig(t, c, 2, nats.Options{ViewCache: file})
	cfg.Ops = 200
	if soak {
		cfg.Ops = 3000
	}
	reopen := cfg.Reopen
	var restarts, loaded int
	cfg.Reopen = func(ctx context.Context, keep int) (store.Store, error) {
		next, err := reopen(ctx, keep)
		if err == nil {
			restarts++
			if nats.ViewCacheLoaded(next.(*nats.Store)) != 0 {
				loaded++
			}
		}
		return next, err
	}
	pastcheck.Check(t, t.Context(), s, cfg)
	if restarts > 0 && loaded == 0 {
		t.Errorf("none of the %d restarts loaded the view cache", restarts)
	}
}
