// Command snapshotbench measures snapshots against baselines taken in the
// same run, and prints markdown tables:
//
//   - the time to create a snapshot of a depot of -files files, in the
//     store (bolt CreateSnapshot) and through the server (a guide_snapshot
//     call), against a one-file write (goal: at most 50 ms at 100,000
//     files, whatever the tree's size: a snapshot is a held revision, not
//     a copy);
//   - a find+sha256sum walk of /.snapshots/S in the mount against the same
//     walk of the live tree, alternating which goes first (goal: at most
//     1.2x), with the FUSE requests of each first walk and the time
//     depotfs took to answer them (from the mount's metrics), which tell
//     depotfs's own share from the kernel's round trips.
//
// The depot is written into the database directly before depotfs starts.
// It needs root (the mount). bench/snapshots.sh builds depotfs and runs it.
// The machine is shared and noisy: compare ratios, not absolute figures,
// and repeat.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	files := flag.Int("files", 100000, "number of files in the depot")
	size := flag.Int("size", 1024, "size of each file in bytes")
	reps := flag.Int("reps", 5, "repetitions of each timing")
	walks := flag.Int("walks", 3, "walks of each tree")
	flag.Parse()
	log.SetFlags(0)
	dir, err := os.MkdirTemp("/var/tmp", "snapshotbench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "depot.db")
	mnt := filepath.Join(dir, "mnt")

	st, err := bolt.Open(db, &bolt.Options{KeepVersions: store.DefaultKeepVersions})
	if err != nil {
		log.Fatal(err)
	}
	fill(st, *files, *size)
	ctx := context.Background()
	fmt.Printf("depot: %d files of %d bytes in %s\n\n", *files, *size, dir)
	var put, create []time.Duration
	for i := range *reps {
		put = append(put, benchd.Timed(func() {
			must(st.Put(ctx, store.PutRequest{Path: fmt.Sprintf("/one/%d.txt", i), Data: []byte("one file")}))
		}))
		create = append(create, benchd.Timed(func() {
			must(st.CreateSnapshot(ctx, store.SnapshotRequest{Name: fmt.Sprintf("store%d", i), Prefix: "/tree"}))
		}))
	}
	if err := st.Close(); err != nil {
		log.Fatal(err)
	}

	srv, url := benchd.Serve(*bin, "--db", db, "--mount", mnt)
	defer func() { srv.Process.Kill(); srv.Wait(); exec.Command("umount", "-l", mnt).Run() }()
	c := benchd.Connect(url, "snapshotbench")
	var callPut, callCreate []time.Duration
	for i := range *reps {
		callPut = append(callPut, benchd.Timed(func() {
			benchd.Call(c, "guide_cache_file", map[string]any{"path": fmt.Sprintf("/one/call%d.txt", i), "content": "one file"})
		}))
		callCreate = append(callCreate, benchd.Timed(func() {
			benchd.Call(c, "guide_snapshot", map[string]any{"action": "create", "name": fmt.Sprintf("call%d", i), "path": "/tree"})
		}))
	}
	median := func(d []time.Duration) time.Duration { return benchd.Quantile(d, 0.5) }
	fmt.Println("| what | median | max | ratio to a one-file write |")
	fmt.Println("|---|---|---|---|")
	row := func(what string, d, base []time.Duration) {
		fmt.Printf("| %s | %v | %v | %.2fx |\n", what, median(d), slices.Max(d).Round(10*time.Microsecond), float64(median(d))/float64(median(base)))
	}
	row("store: Put of one file", put, put)
	row(fmt.Sprintf("store: CreateSnapshot of %d files", *files), create, put)
	row("server: guide_cache_file of one file", callPut, callPut)
	row(fmt.Sprintf("server: guide_snapshot create of %d files", *files), callCreate, callPut)

	live, snap := filepath.Join(mnt, "tree"), filepath.Join(mnt, ".snapshots", "call0")
	metricsURL := strings.TrimSuffix(url, "/mcp") + "/metrics"
	var liveT, snapT []time.Duration
	var liveOps, snapOps map[string]fuseOp
	for i := range *walks {
		// Alternate which goes first, so neither always meets a cache
		// the other warmed.
		before := fuseOps(metricsURL)
		if i%2 == 0 {
			liveT = append(liveT, walk(live))
		} else {
			snapT = append(snapT, walk(snap))
		}
		mid := fuseOps(metricsURL)
		if i%2 == 0 {
			snapT = append(snapT, walk(snap))
		} else {
			liveT = append(liveT, walk(live))
		}
		if i == 0 {
			liveOps, snapOps = diff(mid, before), diff(fuseOps(metricsURL), mid)
		}
	}
	fmt.Printf("\n| find + sha256sum of %d files | first | median | ratio of firsts | ratio of medians |\n", *files)
	fmt.Println("|---|---|---|---|---|")
	fmt.Printf("| live tree (/tree) | %v | %v | 1.00x | 1.00x |\n", liveT[0].Round(time.Millisecond), median(liveT).Round(time.Millisecond))
	fmt.Printf("| snapshot (/.snapshots/call0) | %v | %v | %.2fx | %.2fx |\n", snapT[0].Round(time.Millisecond), median(snapT).Round(time.Millisecond),
		float64(snapT[0])/float64(liveT[0]), float64(median(snapT))/float64(median(liveT)))
	fmt.Println("\nFUSE requests of the first walk of each, and the time depotfs took to answer them:")
	fmt.Println("\n| op | live count | live time | snapshot count | snapshot time |")
	fmt.Println("|---|---|---|---|---|")
	for _, op := range slices.Sorted(maps.Keys(snapOps)) {
		l, s := liveOps[op], snapOps[op]
		fmt.Printf("| %s | %.0f | %.3fs | %.0f | %.3fs |\n", op, l.n, l.secs, s.n, s.secs)
	}
}

// fuseOp is what the mount's metrics count of one FUSE operation.
type fuseOp struct{ n, secs float64 }

var opLine = regexp.MustCompile(`^depotfs_fuse_operation_duration_seconds_(count|sum)\{op="([^"]+)"\} (\S+)$`)

// fuseOps scrapes the FUSE operations served so far.
func fuseOps(url string) map[string]fuseOp {
	res, err := http.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]fuseOp{}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		m := opLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		o := out[m[2]]
		if m[1] == "count" {
			o.n = v
		} else {
			o.secs = v
		}
		out[m[2]] = o
	}
	return out
}

// diff is what after counts beyond before.
func diff(after, before map[string]fuseOp) map[string]fuseOp {
	out := map[string]fuseOp{}
	for op, a := range after {
		b := before[op]
		if a.n > b.n {
			out[op] = fuseOp{a.n - b.n, a.secs - b.secs}
		}
	}
	return out
}

// fill writes files files of size bytes under /tree, 1,000 a batch, 100
// a directory.
func fill(st *bolt.Store, files, size int) {
	var batch []store.PutRequest
	for i := range files {
		data := []byte(fmt.Sprintf("%0*d", size, i))
		batch = append(batch, store.PutRequest{Path: fmt.Sprintf("/tree/d%04d/f%06d.txt", i/100, i), Data: data})
		if len(batch) == 1000 || i == files-1 {
			if _, err := st.PutBatch(context.Background(), batch); err != nil {
				log.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// walk hashes every file below root with find and sha256sum.
func walk(root string) time.Duration {
	return benchd.Timed(func() {
		cmd := exec.Command("sh", "-c", "find . -type f -print0 | xargs -0 sha256sum > /dev/null")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("walk %s: %v\n%s", root, err, out)
		}
	})
}

func must[T any](_ T, err error) {
	if err != nil {
		log.Fatal(err)
	}
}
