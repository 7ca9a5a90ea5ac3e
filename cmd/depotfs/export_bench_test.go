package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

// BenchmarkExportBolt exports a bolt depot of 8 files of 8 MiB and 300
// small ones (the integration test's depot) from a temporary snapshot, as
// export --url does in the server, to a file it fsyncs, and, in the same
// run, copies the database file and fsyncs the copy (cp && sync). It
// reports both throughputs in MiB/s and export's as a fraction of the
// copy's (the goal is 0.5x). Profile it with -cpuprofile:
//
//	go test -run '^$' -bench BenchmarkExportBolt -benchtime 5x -cpuprofile /tmp/export.prof ./cmd/depotfs
func BenchmarkExportBolt(b *testing.B) {
	dir := b.TempDir()
	db := filepath.Join(dir, "depot.db")
	st, err := bolt.Open(db, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 8 {
		data := make([]byte, 8<<20)
		for j := range data {
			data[j] = byte(rng.Uint32())
		}
		if _, err := st.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/seed/f%02d.bin", i), Data: data}); err != nil {
			b.Fatal(err)
		}
	}
	var small []store.PutRequest
	for i := range 300 {
		small = append(small, store.PutRequest{Path: fmt.Sprintf("/small/f%03d.txt", i), Data: fmt.Appendf(nil, "seed file %d %x\n", i, sha256.Sum256([]byte{byte(i)}))})
	}
	if _, err := st.PutBatch(ctx, small); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(db)
	if err != nil {
		b.Fatal(err)
	}
	var exportT, copyT time.Duration
	var exported int64
	for i := 0; b.Loop(); i++ {
		out := filepath.Join(dir, fmt.Sprintf("e%d.tar", i))
		start := time.Now()
		f, err := os.Create(out)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := exportStore(ctx, st, false, f, func(uint64) {}); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		efi, _ := f.Stat()
		f.Close()
		exportT += time.Since(start)
		exported += efi.Size()
		os.Remove(out)

		start = time.Now()
		if err := copySync(db, filepath.Join(dir, "copy.db")); err != nil {
			b.Fatal(err)
		}
		copyT += time.Since(start)
	}
	n := float64(b.N)
	mibps := func(bytes float64, d time.Duration) float64 { return bytes / (1 << 20) / d.Seconds() }
	e, c := mibps(float64(exported), exportT), mibps(n*float64(fi.Size()), copyT)
	b.ReportMetric(e, "export-MiB/s")
	b.ReportMetric(c, "cp-sync-MiB/s")
	b.ReportMetric(e/c, "export/cp")
}

// copySync copies from to to and fsyncs the copy, as cp && sync would.
func copySync(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
