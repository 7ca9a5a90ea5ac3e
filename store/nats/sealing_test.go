package nats_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/seal"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/fetch"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/nats/natstest"
	"github.com/depotfs/depotfs/store/storetest"
	"github.com/depotfs/depotfs/vfs"
	"github.com/nats-io/nats.go/jetstream"
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
	c := sharedCluster(t)
	kek := testKEK(t)
	storetest.RunAll(t, func(t *testing.T, cfg storetest.Config) store.Store {
		return openWith(t, c, cfg, fmt.Sprintf("t%d", depots.Add(1)), smallChunks(cfg, nats.Options{InlineBytes: 256, MaxChunkSize: 16 << 10, Key: kek}))
	})
}

// sealMarker is plaintext the test looks for in the servers' files,
// followed by the depot's prefix: the cluster is shared, and another
// depot's marker is not this one's.
const sealMarker = "NATS-SEALED-MARKER-9e2b-"

// countMarker counts marker in every file of the cluster's servers.
func countMarker(t *testing.T, c *natstest.Cluster, marker string) int {
	t.Helper()
	return countAll(t, c, marker)
}

// countAll counts each of needles in every file of the cluster's servers,
// in one walk, and returns the sum.
func countAll(t *testing.T, c *natstest.Cluster, needles ...string) int {
	t.Helper()
	n := 0
	for _, node := range c.Nodes {
		// The servers go on writing for the other tests meanwhile: a
		// file may be gone between its listing and its reading.
		err := filepath.WalkDir(node.Dir, func(p string, d os.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			for _, s := range needles {
				n += bytes.Count(b, []byte(s))
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// TestSealedAtRest writes inline content, chunked content, a chunked
// upload, equal content twice, a placeholder declaring a hash, a version
// kept by history and a snapshot to a depot: with a key, the servers'
// files hold neither the plaintext nor any content's plain SHA-256, in
// hex or raw (the control without a key holds both); equal content is
// one blob either way; a second host with the key, which decodes every
// record from the stream, reads everything back and shows plain hashes
// in entries, placeholders, history, snapshots and the change log; and
// hosts without the key or with another are refused at Open, naming the
// key the depot wants.
func TestSealedAtRest(t *testing.T) {
	t.Parallel()
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "clear", true: "sealed"}[sealed], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			c := sharedCluster(t)
			prefix := fmt.Sprintf("sr%d", depots.Add(1))
			marker := sealMarker + prefix
			var kek seal.Wrapper
			if sealed {
				kek = testKEK(t)
			}
			opts := nats.Options{InlineBytes: 1024, MaxChunkSize: 16 << 10, Key: kek}
			cfg := storetest.Config{KeepVersions: 2}
			s := openWith(t, c, cfg, prefix, opts)
			files := map[string][]byte{
				"/inline.txt": []byte(marker + " small\n"),
				"/chunks.txt": bytes.Repeat([]byte(marker+" large\n"), 3000),
			}
			for p, d := range files {
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: d}); err != nil {
					t.Fatal(err)
				}
			}
			up := bytes.Repeat([]byte(marker+" upload\n"), 2000)
			files["/upload.txt"] = up
			half := len(up) / 2
			for i, part := range [][]byte{up[:half], up[half:]} {
				_, err := s.PutChunk(ctx, store.Chunk{UploadID: "u", Index: i, Count: 2, Data: part,
					File: store.PutRequest{Path: "/upload.txt", SHA256: storetest.Sum(up)}})
				if err != nil {
					t.Fatal(err)
				}
			}
			dup := []byte(marker + " twice\n")
			for _, p := range []string{"/dup1.txt", "/dup2.txt"} {
				if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: dup}); err != nil {
					t.Fatal(err)
				}
				files[p] = dup
			}
			declared := []byte(marker + " declared\n")
			_, err := s.Declare(ctx, store.DeclareRequest{Entries: []store.Declaration{
				{Path: "/declared.txt", Kind: store.KindFile, Size: int64(len(declared)), SHA256: storetest.Sum(declared)}}})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := s.(store.Versions).CreateSnapshot(ctx, store.SnapshotRequest{Name: "before"})
			if err != nil {
				t.Fatal(err)
			}
			old := files["/inline.txt"]
			files["/inline.txt"] = []byte(marker + " small, again\n")
			if _, err := s.Put(ctx, store.PutRequest{Path: "/inline.txt", Data: files["/inline.txt"], SHA256: storetest.Sum(files["/inline.txt"])}); err != nil {
				t.Fatal(err)
			}
			// A host's demand-fetch request for the placeholder names
			// its hash too.
			ex, err := s.(*nats.Store).Requests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			req := fetch.Request{ID: 1, Path: "/declared.txt", SHA256: storetest.Sum(declared), Waiters: 1}
			if err := ex.Publish(ctx, req); err != nil {
				t.Fatal(err)
			}
			n := countMarker(t, c, marker)
			if sealed && n != 0 {
				t.Fatalf("the servers' files hold the plaintext %d times", n)
			}
			if !sealed && n == 0 {
				t.Fatal("the control without a key does not show its plaintext: the test looks in the wrong place")
			}
			var sums []string
			plain := map[string]bool{"": true}
			for _, d := range append(slices.Collect(maps.Values(files)), old, declared) {
				sum := sha256.Sum256(d)
				sums = append(sums, hex.EncodeToString(sum[:]), string(sum[:]))
				plain[hex.EncodeToString(sum[:])] = true
			}
			n = countAll(t, c, sums...)
			if sealed && n != 0 {
				t.Fatalf("the servers' files hold plain content hashes %d times", n)
			}
			if !sealed && n == 0 {
				t.Fatal("the control without a key does not show its content hashes: the test looks in the wrong place")
			}
			// One blob for each content: the equal files share one.
			js, err := jetstream.New(c.Connect(t))
			if err != nil {
				t.Fatal(err)
			}
			tree, err := js.Stream(ctx, "KV_"+prefix+"-tree")
			if err != nil {
				t.Fatal(err)
			}
			info, err := tree.Info(ctx, jetstream.WithSubjectFilter("$KV."+prefix+"-tree.b.>"))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(info.State.Subjects); got != 5 {
				t.Errorf("%d blob records for 5 contents (one of them in two files)", got)
			}

			// A sweep for leaked chunks finds every chunk of the files
			// live (it names them by the same ids) and leaves them.
			if _, err := s.(*nats.Store).SweepChunks(ctx, time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}

			// Another host, with the same key, reads it all.
			s2 := openWith(t, c, cfg, prefix, opts)
			for p, want := range files {
				if e, err := s2.Stat(ctx, p); err != nil || e.SHA256 != storetest.Sum(want) {
					t.Errorf("Stat %s on a second host: %q, %v; want the plain hash", p, e.SHA256, err)
				}
			}
			if e, err := s2.Stat(ctx, "/declared.txt"); err != nil || e.DeclaredSHA256 != storetest.Sum(declared) {
				t.Errorf("the placeholder on a second host: declared %q, %v; want the plain hash", e.DeclaredSHA256, err)
			}
			if h, err := s2.(store.Versions).History(ctx, "/inline.txt"); err != nil || len(h) != 2 || h[1].SHA256 != storetest.Sum(old) {
				t.Errorf("History on a second host: %+v, %v; want the earlier version's plain hash", h, err)
			}
			if e, err := s2.(store.Versions).StatAt(ctx, "/inline.txt", snap.Revision); err != nil || e.SHA256 != storetest.Sum(old) {
				t.Errorf("the snapshot on a second host: %q, %v; want the plain hash", e.SHA256, err)
			}
			ex2, err := s2.(*nats.Store).Requests(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			seen := make(chan []fetch.Request, 1)
			go ex2.Watch(wctx, func(rs []fetch.Request) {
				if len(rs) > 0 {
					select {
					case seen <- rs:
					default:
					}
				}
			})
			select {
			case rs := <-seen:
				if rs[0].Path != req.Path || rs[0].SHA256 != req.SHA256 {
					t.Errorf("the request on a second host: %+v; want %+v", rs[0], req)
				}
			case <-time.After(30 * time.Second):
				t.Error("the second host never saw the first one's request")
			}
			stop()
			page, err := s2.Changes(ctx, "/", 0, 100)
			if err != nil || len(page.Events) < len(files) {
				t.Fatalf("Changes on a second host: %d events, %v", len(page.Events), err)
			}
			for _, ev := range page.Events {
				if !plain[ev.Entry.SHA256] || !plain[ev.Entry.DeclaredSHA256] {
					t.Errorf("change event %s %s: hashes %q, %q; want plain ones", ev.Kind, ev.Path, ev.Entry.SHA256, ev.Entry.DeclaredSHA256)
				}
			}
			if _, err := s2.Put(ctx, store.PutRequest{Path: "/dup1.txt", Data: dup, SHA256: storetest.Sum(old)}); !errors.Is(err, store.ErrHashMismatch) {
				t.Errorf("a put declaring another hash = %v; want ErrHashMismatch", err)
			}
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
				o.Prefix, o.Key = prefix, testKEK(t)
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
				o.Prefix, o.Key = prefix, c2.key
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

// TestSealedPlainAddresses opens a depot sealed before keyed addresses
// (a version 1 seal record: content named by its plain hash, which the
// servers' files show): a host of this build reads it, and writes and
// reads new content in it, as it was.
func TestSealedPlainAddresses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("spa%d", depots.Add(1))
	opts := nats.Options{InlineBytes: 1024, MaxChunkSize: 16 << 10, Key: testKEK(t)}
	old := opts
	nats.PlainAddresses(&old)
	s := openWith(t, c, storetest.Config{}, prefix, old)
	files := map[string][]byte{
		"/inline.txt": []byte(prefix + " small\n"),
		"/chunks.txt": bytes.Repeat([]byte(prefix+" large\n"), 3000),
	}
	for p, d := range files {
		if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: d}); err != nil {
			t.Fatal(err)
		}
	}
	if countAll(t, c, storetest.Sum(files["/inline.txt"]), storetest.Sum(files["/chunks.txt"])) == 0 {
		t.Fatal("the depot does not name content by its plain hash: not the old format")
	}
	s2 := openWith(t, c, storetest.Config{}, prefix, opts)
	files["/new.txt"] = bytes.Repeat([]byte(prefix+" new\n"), 3000)
	if _, err := s2.Put(ctx, store.PutRequest{Path: "/new.txt", Data: files["/new.txt"]}); err != nil {
		t.Fatal(err)
	}
	for _, st := range []store.Store{s2, s} {
		for p, want := range files {
			ct, err := st.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
			ct.Close()
			if err != nil || !bytes.Equal(got, want) || ct.SHA256() != storetest.Sum(want) {
				t.Fatalf("%s: %d bytes, %v; want %d", p, len(got), err, len(want))
			}
		}
	}
}

// TestSealedTampered flips a byte of a sealed chunk and of sealed inline
// content in JetStream, republished on the same subject as a damaged or
// altered server would hold them: a host that reads them gets an error
// wrapping seal.ErrTampered and store.ErrCorrupt (EIO on the mount),
// never bytes, and counts each failed read; a file left alone still reads.
func TestSealedTampered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("st%d", depots.Add(1))
	opts := nats.Options{InlineBytes: 1024, MaxChunkSize: 16 << 10, Key: testKEK(t)}
	s := openWith(t, c, storetest.Config{}, prefix, opts)
	files := map[string][]byte{
		"/inline.txt":    []byte("small\n"),
		"/chunks.txt":    bytes.Repeat([]byte("large\n"), 3000),
		"/bystander.txt": []byte("left alone\n"),
	}
	for _, p := range []string{"/inline.txt", "/chunks.txt"} {
		if _, err := s.Put(ctx, store.PutRequest{Path: p, Data: files[p]}); err != nil {
			t.Fatal(err)
		}
	}
	// Each subject of the content written so far, found by listing the
	// streams, so the test does not depend on how content is addressed.
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	flip := func(stream, filter string) {
		t.Helper()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
		if len(info.State.Subjects) == 0 {
			t.Fatalf("no message on %s in %s: the test looks in the wrong place", filter, stream)
		}
		for subj := range info.State.Subjects {
			m, err := st.GetLastMsgForSubject(ctx, subj)
			if err != nil {
				t.Fatal(err)
			}
			data := bytes.Clone(m.Data)
			data[len(data)/2] ^= 0x20
			if _, err := js.Publish(ctx, subj, data); err != nil {
				t.Fatalf("republish %s: %v", subj, err)
			}
		}
	}
	flip(prefix+"-chunks", prefix+"-chunks.>")
	flip("KV_"+prefix+"-tree", "$KV."+prefix+"-tree.d.>")
	if _, err := s.Put(ctx, store.PutRequest{Path: "/bystander.txt", Data: files["/bystander.txt"]}); err != nil {
		t.Fatal(err)
	}

	// A second host, whose caches never held the content before it was
	// changed.
	s2 := openWith(t, c, storetest.Config{}, prefix, opts)
	for _, p := range []string{"/inline.txt", "/chunks.txt"} {
		for range 2 {
			ct, err := s2.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, len(files[p]))
			n, err := ct.ReadAt(buf, 0)
			ct.Close()
			if n != 0 || !errors.Is(err, seal.ErrTampered) || !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("%s: ReadAt = %d, %v; want 0, ErrTampered and ErrCorrupt", p, n, err)
			}
			if errno, _ := vfs.StoreErrno(err); errno != syscall.EIO {
				t.Errorf("%s: the mount would answer %v; want EIO", p, errno)
			}
		}
	}
	ct, err := s2.Open(ctx, "/bystander.txt")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
	ct.Close()
	if err != nil || !bytes.Equal(got, files["/bystander.txt"]) {
		t.Errorf("untouched file: %q, %v", got, err)
	}
	if n := s2.(interface{ TamperedChunks() uint64 }).TamperedChunks(); n != 4 {
		t.Errorf("TamperedChunks = %d after four failed reads; want 4", n)
	}
}

// TestSealedRekey rotates a depot's key-encryption key with nats.Rekey
// while a host serves it: that host goes on reading and writing with the
// data key it holds, a host started afterwards needs the new key (the old
// one is refused, naming both), the old key no longer rotates anything,
// and of two rotations at once exactly one takes effect.
func TestSealedRekey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("kek%d", depots.Add(1))
	k1, k2 := testKEK(t), testKEK(t)
	opts := nats.Options{InlineBytes: 1024, MaxChunkSize: 16 << 10, Key: k1}
	s := openWith(t, c, storetest.Config{}, prefix, opts)
	files := map[string][]byte{"/before.txt": bytes.Repeat([]byte("before the rotation\n"), 2000)}
	if _, err := s.Put(ctx, store.PutRequest{Path: "/before.txt", Data: files["/before.txt"]}); err != nil {
		t.Fatal(err)
	}
	nc := c.Connect(t)
	r, err := nats.Rekey(ctx, nc, prefix, k1, k2)
	if err != nil {
		t.Fatal(err)
	}
	if r.KEKID != k2.KeyID() {
		t.Fatalf("record wrapped by %s; want %s", r.KEKID, k2.KeyID())
	}
	files["/after.txt"] = bytes.Repeat([]byte("after the rotation\n"), 2000)
	if _, err := s.Put(ctx, store.PutRequest{Path: "/after.txt", Data: files["/after.txt"]}); err != nil {
		t.Fatalf("the running host after the rotation: %v", err)
	}
	readAll := func(s store.Store) {
		t.Helper()
		for p, want := range files {
			ct, err := s.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(io.NewSectionReader(ct, 0, ct.Size()))
			ct.Close()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: %d bytes, %v; want %d", p, len(got), err, len(want))
			}
		}
	}
	readAll(s)
	o2 := opts
	o2.Key = k2
	readAll(openWith(t, c, storetest.Config{}, prefix, o2))
	o1 := opts
	o1.Prefix = prefix
	if st, err := nats.Open(ctx, c.Connect(t), &o1); err == nil {
		st.Close()
		t.Fatal("a host with the old key opened the depot after the rotation")
	} else if !errors.Is(err, seal.ErrWrongKey) || !strings.Contains(err.Error(), k1.KeyID()) || !strings.Contains(err.Error(), k2.KeyID()) {
		t.Fatalf("a host with the old key: %v; want ErrWrongKey naming both keys", err)
	}
	if _, err := nats.Rekey(ctx, nc, prefix, k1, testKEK(t)); !errors.Is(err, seal.ErrWrongKey) {
		t.Fatalf("Rekey with the old key = %v; want ErrWrongKey", err)
	}

	// Two rotations at once: one wins; the other finds the record changed
	// (ErrSealChanged) or already wrapped by the winner's key.
	k3, k4 := testKEK(t), testKEK(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, next := range []*seal.FileKey{k3, k4} {
		wg.Go(func() { _, errs[i] = nats.Rekey(ctx, c.Connect(t), prefix, k2, next) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatal("both concurrent rotations succeeded")
		case !errors.Is(err, nats.ErrSealChanged) && !errors.Is(err, seal.ErrWrongKey):
			t.Fatalf("the losing rotation: %v; want ErrSealChanged or ErrWrongKey", err)
		}
	}
	if won < 0 {
		t.Fatalf("neither concurrent rotation succeeded: %v", errs)
	}
	o := opts
	o.Key = []*seal.FileKey{k3, k4}[won]
	readAll(openWith(t, c, storetest.Config{}, prefix, o))

	if _, err := nats.Rekey(ctx, nc, prefix+"none", k1, k2); !errors.Is(err, nats.ErrNoDepot) {
		t.Errorf("Rekey of a prefix without a depot = %v; want ErrNoDepot", err)
	}
	openWith(t, c, storetest.Config{}, prefix+"clear", nats.Options{})
	if _, err := nats.Rekey(ctx, nc, prefix+"clear", k1, k2); !errors.Is(err, seal.ErrNotSealed) {
		t.Errorf("Rekey of a clear depot = %v; want ErrNotSealed", err)
	}
}
