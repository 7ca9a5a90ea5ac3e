package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
)

// TestUsesBounded checks the bounds on the uses reads leave in memory:
// the map stops growing at maxDirtyUses while every read is still
// counted, a use of a blob already waiting is still recorded, and a
// transaction takes at most usesPerFlush of them.
func TestUsesBounded(t *testing.T) {
	var u uses
	u.init(counters{}, usesPerFlush)
	h := func(i int) hash {
		var x hash
		binary.BigEndian.PutUint64(x[:], uint64(i))
		return x
	}
	const reads = maxDirtyUses + 1000
	for i := range reads {
		u.hit(h(i))
	}
	if got := u.waiting(); got != maxDirtyUses {
		t.Fatalf("%d uses waiting after %d reads, want %d", got, reads, maxDirtyUses)
	}
	if got := u.hits.Load(); got != reads {
		t.Fatalf("%d hits counted, want %d", got, reads)
	}
	u.hit(h(0)) // waiting: its use moves on
	if got, want := u.dirty[h(0)], u.last(); got != want {
		t.Fatalf("use of a waiting blob %d, want the last, %d", got, want)
	}
	taken := 0
	for u.pending() {
		d := u.take()
		if len(d) > usesPerFlush {
			t.Fatalf("a flush took %d uses, more than %d", len(d), usesPerFlush)
		}
		taken += len(d)
	}
	if taken != maxDirtyUses || u.waiting() != 0 {
		t.Fatalf("took %d uses in all, %d left; want %d, none", taken, u.waiting(), maxDirtyUses)
	}
}

// TestSweeperPersistsWaitingUses reads more files than a transaction
// persists: the sweeper persists them without waiting for FlushInterval
// (an hour here), a transaction's worth at a time. A transaction's worth
// is 64 uses here rather than 4,096: the sweeper's rule is the same, and
// 8,000 files cost a minute of CPU under -race to write.
func TestSweeperPersistsWaitingUses(t *testing.T) {
	const perFlush = 64
	s, err := Open(filepath.Join(t.TempDir(), "depot.db"), &Options{FlushInterval: time.Hour, SweepInterval: 20 * time.Millisecond, usesPerFlush: perFlush, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	const n = 2*perFlush + 100
	var reqs []store.PutRequest
	for i := range n {
		reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/d/f%05d", i), Data: []byte(fmt.Sprint(i))})
	}
	if _, err := s.PutBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		c, err := s.Open(ctx, r.Path)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.uses.waiting() >= perFlush {
		if time.Now().After(deadline) {
			t.Fatalf("%d uses still waiting 10 s after the reads", s.uses.waiting())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := Verify(s); err != nil {
		t.Fatal(err)
	}
}
