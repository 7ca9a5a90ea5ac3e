// Command walkbench measures what a first walk over the mount costs the
// server, a file at a time, against the FUSE floor (bench/internal/floor)
// in the same run: the CPU the serving process spent (user and system,
// from getrusage), and the objects, bytes and collections its Go heap
// allocated, during `find -type f` or `ls -lR` of a mount made just before
// (so the kernel knows no file). The allocation counts do not depend on
// the machine's load, which bench/scale.sh's wall and CPU times do on a
// shared machine; they are the figure to compare between two versions.
//
// The depot is a bolt store written directly (not pushed), the tree of
// bench/scale.sh (/bK/dDDDDD/fNNNNNNNN.txt, -per-dir files of 64 to 2048
// bytes a directory), kept in -db between runs; with -seed it only writes
// -db, -batch files a transaction, for bench/scale.sh -seeded to measure
// sizes whose pushes would take hours. Each side runs in its own
// process (this command with -side), the mount in-process with vfs's
// defaults and the collector's settings the server makes of
// -memory-limit (internal/memlimit, as depotfs's --memory-limit; 0: the
// Go runtime's defaults), the floor with the runtime's; the two alternate,
// -reps walks each, and the medians are printed with their ratio. With
// -cpuprofile PREFIX each side's process writes a CPU profile of its walk
// N to PREFIX-N-depotfs.pprof or PREFIX-N-floor.pprof (go tool pprof
// takes them all at once); with -memprofile PREFIX, a profile of what it
// allocated (PREFIX-N-SIDE.pprof, with PREFIX-N-SIDE-base.pprof, what it
// had allocated before the walk, for pprof's -diff_base). The page faults
// a file are printed too: the database's pages mapped on first touch and
// the heap's growth, which both sides pay in system time. It needs root
// (FUSE).
// bench/walk.sh builds and runs it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/depotfs/depotfs/bench/internal/floor"
	"github.com/depotfs/depotfs/internal/memlimit"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/vfs"
)

var walkCmd = map[string][]string{
	"find": {"find", "%s", "-type", "f"},
	"ls":   {"ls", "-lR", "%s"},
}

// pass is what one walk cost the serving process, a file.
type pass struct {
	CPU    float64 // µs of user and system time
	Allocs float64 // heap objects allocated
	Bytes  float64 // heap bytes allocated
	GCs    uint32  // collections during the walk (not a file)
	Faults float64 // page faults (minor and major): the database's pages mapped on first touch, the heap's on growth
}

func main() {
	db := flag.String("db", "/var/tmp/walkbench.db", "bolt `file` holding the depot; written first if missing")
	files := flag.Int("files", 100000, "files in the depot")
	perDir := flag.Int("per-dir", 1000, "files in each directory")
	work := flag.String("work", "find", "walk: find or ls")
	reps := flag.Int("reps", 3, "walks of each side, alternating; the median is printed")
	prof := flag.String("cpuprofile", "", "write each side's CPU profile of its walk N to `prefix`-N-SIDE.pprof")
	memLimit := flag.Int64("memory-limit", 128, "the depotfs side's memory budget in `MiB`, as depotfs --memory-limit (0: the Go runtime's defaults)")
	memProf := flag.String("memprofile", "", "write each side's profile of what its walk N allocated to `prefix`-N-SIDE.pprof (sampling slows allocation: not for CPU figures)")
	side := flag.String("side", "", "internal: serve and walk this side (depotfs or floor), print each pass")
	seedOnly := flag.Bool("seed", false, "only write the depot at -db, which must not exist, print how long it took and exit")
	batch := flag.Int("batch", 1000, "files in each transaction of the depot's writing")
	flag.Parse()
	if _, ok := walkCmd[*work]; !ok {
		log.Fatalf("-work: unknown %q", *work)
	}
	if *seedOnly {
		seed(*db, *files, *perDir, max(*batch, 1))
		return
	}
	if *side != "" {
		serve(*side, *db, *files, *perDir, *work, *reps, *prof, *memProf, *memLimit<<20)
		return
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("walkbench: %s, %d files, %d a directory, %s, %d passes a side, memory limit %d MiB; load average at start: %s\n",
		time.Now().UTC().Format(time.RFC3339), *files, *perDir, *work, *reps, *memLimit, loadavg())
	got := map[string][]pass{}
	for k := range *reps {
		for _, s := range []string{"depotfs", "floor"} {
			p, mp := "", ""
			if *prof != "" {
				p = fmt.Sprintf("%s-%d", *prof, k+1)
			}
			if *memProf != "" {
				mp = fmt.Sprintf("%s-%d", *memProf, k+1)
			}
			got[s] = append(got[s], runSide(self, s, *db, *files, *perDir, *work, p, mp, *memLimit)...)
		}
	}
	med := func(s string, f func(pass) float64) float64 {
		var xs []float64
		for _, p := range got[s] {
			xs = append(xs, f(p))
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	fmt.Printf("\n| work | files | server CPU µs a file, depotfs / floor | ×floor | objects a file | ×floor | bytes a file | ×floor | page faults a file | collections a walk | load at end |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	row := []func(pass) float64{
		func(p pass) float64 { return p.CPU },
		func(p pass) float64 { return p.Allocs },
		func(p pass) float64 { return p.Bytes },
	}
	fmt.Printf("| %s | %d ", *work, *files)
	for _, f := range row {
		d, fl := med("depotfs", f), med("floor", f)
		fmt.Printf("| %.2f / %.2f | %.2f× ", d, fl, d/fl)
	}
	faults := func(p pass) float64 { return p.Faults }
	gcs := func(p pass) float64 { return float64(p.GCs) }
	fmt.Printf("| %.3f / %.3f | %.0f / %.0f | %s |\n", med("depotfs", faults), med("floor", faults), med("depotfs", gcs), med("floor", gcs), loadavg())
}

// runSide runs one pass of side in a process of its own.
func runSide(self, side, db string, files, perDir int, work, prof, memProf string, memLimitMiB int64) []pass {
	args := []string{"-side", side, "-db", db, "-files", strconv.Itoa(files), "-per-dir", strconv.Itoa(perDir), "-work", work, "-reps", "1",
		"-memory-limit", strconv.FormatInt(memLimitMiB, 10)}
	if prof != "" {
		args = append(args, "-cpuprofile", prof)
	}
	if memProf != "" {
		args = append(args, "-memprofile", memProf)
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatalf("%s side: %v", side, err)
	}
	var ps []pass
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var p pass
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			log.Fatalf("%s side said %q: %v", side, sc.Text(), err)
		}
		ps = append(ps, p)
	}
	return ps
}

// serve mounts side's tree reps times, walks it each time and prints a
// pass a line, as JSON; the depotfs side's collector works to memLimit
// bytes as the server's does.
func serve(side, db string, files, perDir int, work string, reps int, prof, memProf string, memLimit int64) {
	if memProf != "" {
		// Sample finely enough to attribute the few objects a file
		// costs; the profile covers the walks only (see below).
		runtime.MemProfileRate = 512
	}
	mnt, err := os.MkdirTemp("", "walkbench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.Remove(mnt)
	var mount func() (unmount func())
	switch side {
	case "floor":
		t := floor.New(time.Now())
		for i := range files {
			p, data := floor.File(i, perDir)
			t.Add(p, data)
		}
		mount = func() func() {
			srv, err := floor.Mount(mnt, t)
			if err != nil {
				log.Fatal(err)
			}
			return func() { srv.Unmount() }
		}
	case "depotfs":
		st := openDepot(db, files, perDir, 1000)
		defer st.Close()
		defer memlimit.Start(memLimit, slog.Default())()
		mount = func() func() {
			m, err := vfs.Mount(context.Background(), mnt, st, nil)
			if err != nil {
				log.Fatal(err)
			}
			return func() { m.Unmount() }
		}
	default:
		log.Fatalf("-side: unknown %q", side)
	}
	if prof != "" {
		f, err := os.Create(prof + "-" + side + ".pprof")
		if err != nil {
			log.Fatal(err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	runtime.GC()
	if memProf != "" {
		// What the tree's building allocated is in the profile already:
		// written after the walks, the profile's allocations minus these
		// are the walks'. pprof's -diff_base takes both.
		writeHeapProfile(memProf + "-" + side + "-base.pprof")
		defer func() { writeHeapProfile(memProf + "-" + side + ".pprof") }()
	}
	enc := json.NewEncoder(os.Stdout)
	for range reps {
		unmount := mount()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		c0, f0 := cpu()
		args := slices.Clone(walkCmd[work])
		for i, a := range args {
			if a == "%s" {
				args[i] = mnt
			}
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("%v: %v", args, err)
		}
		c1, f1 := cpu()
		c := c1 - c0
		runtime.ReadMemStats(&m1)
		n := float64(files)
		enc.Encode(pass{CPU: float64(c.Nanoseconds()) / 1e3 / n, Allocs: float64(m1.Mallocs-m0.Mallocs) / n,
			Bytes: float64(m1.TotalAlloc-m0.TotalAlloc) / n, GCs: m1.NumGC - m0.NumGC, Faults: float64(f1-f0) / n})
		unmount()
	}
}

// writeHeapProfile writes the heap profile, with every allocation so far,
// to p.
func writeHeapProfile(p string) {
	runtime.GC() // the profile is as of the last collection
	f, err := os.Create(p)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}

// seed writes the depot at db, which must not exist, closes it and
// prints the time it took: how bench/scale.sh's largest sizes are made
// without pushing millions of files at a push's rate.
func seed(db string, files, perDir, batch int) {
	if _, err := os.Stat(db); err == nil {
		log.Fatalf("-seed: %s exists", db)
	}
	start := time.Now()
	st := openDepot(db, files, perDir, batch)
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}
	took := time.Since(start)
	fi, err := os.Stat(db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("walkbench: wrote %d files to %s in %s (%.0f files/s, %d transactions of %d), %d bytes; load average at end: %s\n",
		files, db, took.Round(time.Second), float64(files)/took.Seconds(), (files+batch-1)/batch, batch, fi.Size(), loadavg())
}

// openDepot opens the depot at db, writing its files first if it is new,
// batch files a transaction.
func openDepot(db string, files, perDir, batch int) *bolt.Store {
	_, statErr := os.Stat(db)
	st, err := bolt.Open(db, &bolt.Options{NoSync: true})
	if err != nil {
		log.Fatal(err)
	}
	if statErr == nil {
		return st
	}
	ctx := context.Background()
	for i := 0; i < files; i += batch {
		var reqs []store.PutRequest
		for j := i; j < min(files, i+batch); j++ {
			p, data := floor.File(j, perDir)
			reqs = append(reqs, store.PutRequest{Path: p, Data: data, Encoding: "utf-8", Source: "walkbench", Writer: "walkbench"})
		}
		if _, err := st.PutBatch(ctx, reqs); err != nil {
			log.Fatal(err)
		}
	}
	return st
}

// cpu is the user and system time this process has used, and the page
// faults it took.
func cpu() (time.Duration, int64) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Minflt + ru.Majflt
}

// loadavg is the one-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "?"
}
