// Command fullbench measures a write into a full store (bolt) with a
// snapshot of the whole tree against the same write without one, and
// prints a markdown table.
//
// The depot holds -files files of -size bytes and its limit is exactly
// their size, so every new file makes the store evict one. Without a
// snapshot the least recently used file goes; with a snapshot of the
// whole tree every file written before it is held, and eviction must
// pass over them to the files written since (goal: a write at most 2x
// the same write without the snapshot). Each write is timed alone; the
// first after the snapshot is shown apart, since it may pay for finding
// where the held content ends.
//
// bench/full.sh builds and runs it. The machine is shared and noisy:
// compare ratios, not absolute figures, and repeat.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func main() {
	files := flag.Int("files", 100000, "number of files in the depot")
	size := flag.Int("size", 1024, "size of each file in bytes")
	writes := flag.Int("writes", 30, "timed writes of each kind")
	flag.Parse()
	log.SetFlags(0)
	dir, err := os.MkdirTemp("/var/tmp", "fullbench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "depot.db")
	limit := int64(*files) * int64(*size)
	st := open(db, limit)
	ctx := context.Background()
	fill(ctx, st, *files, *size)

	// put stores one new file and returns its time; evict is how many
	// files it must evict.
	n := 0
	put := func(evict int) time.Duration {
		n++
		data := []byte(fmt.Sprintf("new %0*d", *size-4, n))
		return benchd.Timed(func() {
			res, err := st.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/new/f%06d.txt", n), Data: data})
			if err != nil {
				log.Fatal(err)
			}
			if res.Evicted.Count != evict {
				log.Fatalf("write %d evicted %d files, want %d", n, res.Evicted.Count, evict)
			}
		})
	}
	// Without a snapshot: the store is full, each write evicts the
	// least recently used file of the tree.
	var plain, held []time.Duration
	for range *writes {
		plain = append(plain, put(1))
	}
	// With one: room for -writes more files, taken by files written
	// after the snapshot, which the timed writes then evict: every file
	// of the tree, before them in the order of use, is held.
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	st = open(db, limit+int64(*writes)*int64(*size))
	if _, err := st.CreateSnapshot(ctx, store.SnapshotRequest{Name: "whole"}); err != nil {
		log.Fatal(err)
	}
	for range *writes {
		put(0)
	}
	first := put(1)
	for range *writes {
		held = append(held, put(1))
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	median := func(d []time.Duration) time.Duration { return benchd.Quantile(d, 0.5) }
	fmt.Printf("depot: %d files of %d bytes, the store full\n\n", *files, *size)
	fmt.Println("| write of one new file into the full store | median | max | ratio of medians |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| no snapshot | %v | %v | 1.00x |\n", median(plain).Round(time.Microsecond), slices.Max(plain).Round(time.Microsecond))
	fmt.Printf("| snapshot of the whole tree, first write | %v | | %.2fx |\n", first.Round(time.Microsecond), float64(first)/float64(median(plain)))
	fmt.Printf("| snapshot of the whole tree, next %d writes | %v | %v | %.2fx |\n", *writes, median(held).Round(time.Microsecond), slices.Max(held).Round(time.Microsecond),
		float64(median(held))/float64(median(plain)))
}

// open opens the depot at db with a store limit of limit bytes.
func open(db string, limit int64) *bolt.Store {
	st, err := bolt.Open(db, &bolt.Options{KeepVersions: store.DefaultKeepVersions, MaxStoreBytes: limit})
	if err != nil {
		log.Fatal(err)
	}
	return st
}

// fill writes files files of size bytes under /tree, 1,000 a batch, 100
// a directory.
func fill(ctx context.Context, st *bolt.Store, files, size int) {
	var batch []store.PutRequest
	for i := range files {
		batch = append(batch, store.PutRequest{Path: fmt.Sprintf("/tree/d%04d/f%06d.txt", i/100, i), Data: []byte(fmt.Sprintf("%0*d", size, i))})
		if len(batch) == 1000 || i == files-1 {
			if _, err := st.PutBatch(ctx, batch); err != nil {
				log.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
