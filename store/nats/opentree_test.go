package nats_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/nats"
)

// TestOpenReadsATreeLongerThanTimeout: a host whose reading of the tree
// takes longer than the request time limit, but moves, opens; one whose
// reading stops moving fails within about the limit. The whole read was
// bounded by Timeout, so a host of a large depot (100,000 files on a
// loaded machine) failed every attempt to start. Not parallel: it slows
// every host of the process.
func TestOpenReadsATreeLongerThanTimeout(t *testing.T) {
	c := sharedCluster(t)
	prefix := fmt.Sprintf("long%d", depots.Add(1))
	w, err := nats.Open(t.Context(), c.Connect(t), &nats.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	const batches, perBatch = 20, 5
	for i := range batches {
		var reqs []store.PutRequest
		for j := range perBatch {
			reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%03d-%d", i, j), Data: fmt.Appendf(nil, "%d.%d", i, j)})
		}
		if _, err := w.PutBatch(t.Context(), reqs); err != nil {
			t.Fatal(err)
		}
	}
	const limit = 2 * time.Second
	open := func() (*nats.Store, time.Duration, error) {
		start := time.Now()
		s, err := nats.Open(t.Context(), c.Connect(t), &nats.Options{Prefix: prefix, Timeout: limit})
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, time.Since(start), err
	}

	// 20 batches at 150 ms each: 3 s of reading at least, half again the
	// limit, which a reading bounded as a whole by the limit never ends.
	nats.SlowApply(t, 150*time.Millisecond)
	s, took, err := open()
	if err != nil {
		t.Fatalf("a host reading its tree for %v, never idle for %v: %v", took.Round(time.Millisecond), limit, err)
	}
	if took < batches*150*time.Millisecond {
		t.Fatalf("opened in %v: the tree was not read slowly, so this proves nothing", took)
	}
	st, err := s.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != batches*perBatch {
		t.Fatalf("the host opened with %d files, want %d", st.Files, batches*perBatch)
	}
	r, err := s.Open(t.Context(), fmt.Sprintf("/d/f%03d-%d", batches-1, perBatch-1))
	if err != nil {
		t.Fatal(err)
	}
	r.Close()

	// A batch that takes longer than the limit: no progress, a failure.
	nats.SlowApply(t, 3*limit)
	ctx, cancel := context.WithTimeout(t.Context(), 10*limit)
	defer cancel()
	start := time.Now()
	_, err = nats.Open(ctx, c.Connect(t), &nats.Options{Prefix: prefix, Timeout: limit})
	took = time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a host whose reading stopped: %v, want a deadline exceeded", err)
	}
	if took > 3*limit || ctx.Err() != nil {
		t.Fatalf("a host whose reading stopped failed after %v, want about %v", took.Round(time.Millisecond), limit)
	}
}
