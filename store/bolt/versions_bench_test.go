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
// directory, Stat of every entry) live and at a snapshot, in lock step:
// each call on the live tree is timed next to the same call at the
// snapshot, so the machine's load weighs on both alike. It reports the
// fastest walk of each and their ratio. Every file has a history of 3
// versions; the snapshot is either of the tree as it is (unchanged) or of
// the tree before every file was rewritten once (rewritten: the tree at
// the snapshot is all held versions).
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
			live, at := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
			for b.Loop() {
				l, a := walkBoth(b, s, snap.Revision)
				live, at = min(live, l), min(at, a)
			}
			b.ReportMetric(float64(live.Nanoseconds()), "ns/live-walk")
			b.ReportMetric(float64(at.Nanoseconds()), "ns/snapshot-walk")
			b.ReportMetric(float64(at)/float64(live), "snapshot/live")
		})
	}
}

// walkBoth walks the tree fillTree made live and at revision rev in lock
// step, and returns the time each walk's calls took.
func walkBoth(b *testing.B, s *bolt.Store, rev uint64) (live, at time.Duration) {
	ctx := context.Background()
	timed := func(d *time.Duration, fn func() error) {
		start := time.Now()
		err := fn()
		*d += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	n := 0
	var dir func(p string)
	dir = func(p string) {
		var es, esAt []store.Entry
		timed(&live, func() (err error) { es, err = s.ReadDir(ctx, p); return err })
		timed(&at, func() (err error) { esAt, err = s.ReadDirAt(ctx, p, rev); return err })
		if len(es) != len(esAt) {
			b.Fatalf("%s lists %d entries live, %d at %d", p, len(es), len(esAt), rev)
		}
		for _, e := range es {
			timed(&live, func() error { _, err := s.Stat(ctx, e.Path); return err })
			timed(&at, func() error { _, err := s.StatAt(ctx, e.Path, rev); return err })
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
	return live, at
}

// BenchmarkHistoryGrowth runs the growth model of DESIGN.md on a depot
// of 2,000 files of 8 KiB with KeepVersions 3: each "day", 5 % of the
// files get new content twice, 1 % are removed and as many created; it
// reports the stored bytes after a day and after a week against the
// first day's live bytes, and the versions kept.
func BenchmarkHistoryGrowth(b *testing.B) {
	const files, size = 2000, 8 << 10
	for b.Loop() {
		s, _ := openTemp(b, &bolt.Options{KeepVersions: store.DefaultKeepVersions})
		ctx := context.Background()
		n := 0
		write := func(i int) {
			data := make([]byte, size)
			copy(data, fmt.Sprint(i, "/", n))
			n++
			if _, err := s.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/f%05d", i), Data: data}); err != nil {
				b.Fatal(err)
			}
		}
		for i := range files {
			write(i)
		}
		st, _ := s.Stats(ctx)
		live := float64(st.StoredBytes)
		next := files
		for day := range 7 {
			for j := range files / 20 {
				i := (day*files/20 + j) % files // a different 5 % each day
				write(i)
				write(i)
			}
			for j := range files / 100 {
				_ = s.Remove(ctx, store.RemoveRequest{Path: fmt.Sprintf("/f%05d", (day*97+j*7)%files)})
				write(next)
				next++
			}
			if day == 0 || day == 6 {
				st, _ = s.Stats(ctx)
				b.ReportMetric(float64(st.StoredBytes)/live, fmt.Sprintf("stored/live-day%d", day+1))
				b.ReportMetric(float64(st.Versions), fmt.Sprintf("versions-day%d", day+1))
			}
		}
	}
}
