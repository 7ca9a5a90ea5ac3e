package nats_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
	"github.com/depotfs/depotfs/store/storetest"
)

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestSweepChunks: chunks a crashed host left behind (content uploaded
// but never committed, an upload's chunk never recorded, a stream never
// finished) are deleted by sweeps from both hosts at once, each counted
// once, once older than the cut; chunks of live records (a file, a streamed file, an upload in
// progress, dropped content awaiting deletion) and the chunks of an upload
// in flight newer than the cut are untouched, and still read.
func TestSweepChunks(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	prefix := fmt.Sprintf("t%d", depots.Add(1))
	opts := nats.Options{InlineBytes: -1, MaxChunkSize: 16 << 10} // everything in the chunk stream
	a := openWith(t, c, storetest.Config{}, prefix, opts).(*nats.Store)
	b := openWith(t, c, storetest.Config{}, prefix, opts).(*nats.Store)
	ctx := t.Context()
	data := func(n int, seed byte) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(i*7) ^ seed
		}
		return out
	}

	// Live: a file of three chunks, a streamed file, an upload in
	// progress, and dropped content whose chunks wait for GCDelay.
	file := data(40<<10, 1)
	if _, err := a.Put(ctx, store.PutRequest{Path: "/live", Data: file}); err != nil {
		t.Fatal(err)
	}
	streamed := data(20<<10, 2)
	if _, err := a.PutStream(ctx, store.PutRequest{Path: "/streamed"}, bytes.NewReader(streamed), int64(len(streamed))); err != nil {
		t.Fatal(err)
	}
	up := data(30<<10, 3)
	upFile := store.PutRequest{Path: "/up", SHA256: hexSum(up)}
	if _, err := a.PutChunk(ctx, store.Chunk{UploadID: "in-progress", Index: 0, Count: 2, Data: up[:15<<10], File: upFile}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, store.PutRequest{Path: "/gone", Data: data(20<<10, 4)}); err != nil {
		t.Fatal(err)
	}
	if err := a.Remove(ctx, store.RemoveRequest{Path: "/gone"}); err != nil {
		t.Fatal(err)
	}

	// Leaked: what a host publishes before the commit it never made.
	js, err := jetstream.New(c.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	chunks := prefix + "-chunks"
	publish := func(subjects ...string) {
		t.Helper()
		for _, subj := range subjects {
			if _, err := js.Publish(ctx, subj, []byte("orphan "+subj)); err != nil {
				t.Fatalf("publish %s: %v", subj, err)
			}
		}
	}
	leakedSum := hexSum([]byte("never committed"))
	leaked := []string{
		chunks + "." + leakedSum + ".crashedgen.0", chunks + "." + leakedSum + ".crashedgen.1", // content
		chunks + ".u." + hexSum([]byte("crashed-upload")) + ".0.0", // an upload's first chunk
		chunks + ".s.crashedstream.0",                              // a stream
	}
	publish(leaked...)
	subjects := func() map[string]uint64 {
		t.Helper()
		st, err := js.Stream(ctx, chunks)
		if err != nil {
			t.Fatal(err)
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(chunks+".>"))
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Subjects
	}
	cut := time.Now()
	// In flight on a host right now: newer than the cut.
	inflight := chunks + "." + hexSum([]byte("being uploaded")) + ".livegen.0"
	publish(inflight)
	before := subjects()

	// Both hosts sweep at once: together they delete (and count) each
	// leaked chunk once.
	var wg sync.WaitGroup
	counts := make([]int, 2)
	errs := make([]error, 2)
	for i, s := range []*nats.Store{a, b} {
		wg.Go(func() { counts[i], errs[i] = s.SweepChunks(ctx, cut) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("SweepChunks: %v", err)
	}
	if counts[0]+counts[1] != len(leaked) {
		t.Errorf("SweepChunks on both hosts deleted %v chunks; want the %d leaked in all", counts, len(leaked))
	}
	after := subjects()
	want := maps.Clone(before)
	for _, s := range leaked {
		if _, ok := want[s]; !ok {
			t.Fatalf("leaked chunk %s was not in the stream before the sweep", s)
		}
		delete(want, s)
	}
	if !maps.Equal(after, want) {
		t.Errorf("chunk subjects after the sweep:\n%v\nwant (all but the leaked):\n%v", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(want)))
	}
	if _, ok := after[inflight]; !ok {
		t.Error("the chunk of an upload in flight (newer than the cut) was deleted")
	}

	// The live content still reads, from the other host too, and the
	// upload in progress completes.
	for p, want := range map[string][]byte{"/live": file, "/streamed": streamed} {
		cont, err := b.Open(ctx, p)
		if err != nil {
			t.Fatalf("open %s after the sweep: %v", p, err)
		}
		got := make([]byte, cont.Size())
		_, err = cont.ReadAt(got, 0)
		cont.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s after the sweep: %v (equal %v)", p, err, bytes.Equal(got, want))
		}
	}
	prog, err := b.PutChunk(ctx, store.Chunk{UploadID: "in-progress", Index: 1, Count: 2, Data: up[15<<10:], File: upFile})
	if err != nil || !prog.Complete {
		t.Fatalf("completing the upload in progress after the sweep: %+v, %v", prog, err)
	}

	// Counted, store-wide.
	for _, s := range []*nats.Store{a, b} {
		if err := s.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for name, s := range map[string]*nats.Store{"a": a, "b": b} {
		st, err := s.Stats(ctx)
		if err != nil || st.SweptChunks != int64(len(leaked)) {
			t.Errorf("%s: Stats SweptChunks %d, %v; want %d", name, st.SweptChunks, err, len(leaked))
		}
	}
	// Once older than the cut, the in-flight chunks that were never
	// committed go too; a sweep with nothing to do changes nothing.
	if n, err := a.SweepChunks(ctx, time.Now()); err != nil || n != 1 {
		t.Errorf("second sweep: %d, %v; want the 1 abandoned in-flight chunk", n, err)
	}
	if n, err := a.SweepChunks(ctx, time.Now()); err != nil || n != 0 {
		t.Errorf("third sweep: %d, %v; want 0", n, err)
	}
	st, err := js.Stream(ctx, chunks)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, inflight); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the abandoned in-flight chunk after the second sweep: %v", err)
	}
}
