package bolt_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// fillTree writes files small files, 100 to a directory, in batches of
// 1000.
func fillTree(b *testing.B, s *bolt.Store, files int, seed string) {
	b.Helper()
	ctx := context.Background()
	for start := 0; start < files; start += 1000 {
		var reqs []store.PutRequest
		for i := start; i < min(start+1000, files); i++ {
			reqs = append(reqs, store.PutRequest{Path: fmt.Sprintf("/t/d%03d/f%05d", i/100, i), Data: []byte(seed + fmt.Sprint(i))})
		}
		if _, err := s.PutBatch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateSnapshot creates snapshots of a tree of 100,000 files:
// one record in one commit, whatever the tree's size.
func BenchmarkCreateSnapshot(b *testing.B) {
	s, _ := openTemp(b, nil)
	fillTree(b, s, 100_000, "")
	ctx := context.Background()
	i := 0
	for b.Loop() {
		if _, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: fmt.Sprint("s", i)}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkSnapshotWalk walks a tree of 10,000 files (ReadDir of every
// directory, Stat of every file) live and at a snapshot, alternating in
// each iteration, and reports the fastest walk of each and their ratio. Every
// file has a history of 3 versions; the snapshot is either of the tree as
// it is (unchanged) or of the tree before every file was rewritten once
// (rewritten: the tree at the snapshot is all held versions).
func BenchmarkSnapshotWalk(b *testing.B) {
	for _, rewritten := range []bool{false, true} {
		b.Run(map[bool]string{false: "unchanged", true: "rewritten"}[rewritten], func(b *testing.B) {
			s, _ := openTemp(b, &bolt.Options{KeepVersions: store.DefaultKeepVersions})
			for _, seed := range []string{"a", "b", "c", "d"} {
				fillTree(b, s, 10_000, seed)
			}
			ctx := context.Background()
			snap, err := s.CreateSnapshot(ctx, store.SnapshotRequest{Name: "s"})
			if err != nil {
				b.Fatal(err)
			}
			if rewritten {
				fillTree(b, s, 10_000, "e")
			}
			// The fastest of each: the machine's noise only adds time.
			live, at := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			for b.Loop() {
				live = min(live, walk(b, s, 0))
				at = min(at, walk(b, s, snap.Revision))
			}
			b.ReportMetric(float64(live.Nanoseconds()), "ns/live-walk")
			b.ReportMetric(float64(at.Nanoseconds()), "ns/snapshot-walk")
			b.ReportMetric(float64(at)/float64(live), "snapshot/live")
		})
	}
}

// walk lists every directory of the tree fillTree made and stats every
// entry, live (rev 0) or at revision rev, and returns how long it took.
func walk(b *testing.B, s *bolt.Store, rev uint64) time.Duration {
	ctx := context.Background()
	start := time.Now()
	n := 0
	var dir func(p string)
	dir = func(p string) {
		var es []store.Entry
		var err error
		if rev == 0 {
			es, err = s.ReadDir(ctx, p)
		} else {
			es, err = s.ReadDirAt(ctx, p, rev)
		}
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range es {
			if rev == 0 {
				_, err = s.Stat(ctx, e.Path)
			} else {
				_, err = s.StatAt(ctx, e.Path, rev)
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
			if e.IsDir() {
				dir(e.Path)
			}
		}
	}
	dir("/")
	if n != 10_000+101 {
		b.Fatalf("walked %d entries", n)
	}
	return time.Since(start)
}
