// Command scalebench grows a depot and measures, at each size, what must
// not grow with it, and prints a growth table:
//
//   - push: files a second of `depotfs push` of the files added since the
//     previous size, as a user sends them;
//   - memory: the server's anonymous and file-backed resident memory
//     (RssAnon, RssFile: bbolt's mapped pages, which the kernel can drop)
//     and Go heap in use, after the pushes (on a server started for
//     them) and after the walks, against an empty server's measured at
//     the start of the run; the database size;
//   - restart-to-ready: SIGTERM, start, until the server's ready line (the
//     mount and the listener up);
//   - snapshot create of the whole tree (`depotfs snapshot create`);
//   - a write near the store limit with the snapshots held: the server
//     restarted with --max-store-size 512 KiB above the content it holds,
//     the time `depotfs push` of one 1 MiB file takes to be answered (the
//     snapshots hold every file, so nothing can be evicted for it and it
//     is refused: what is timed is the search for room, which must not
//     walk the depot); and the same write without the snapshots, on a
//     copy of the database with them deleted, where it evicts the least
//     recently used files and is accepted (the copy, so the walks still
//     read every file);
//   - find -type f, ls -lR and cat of every file over the mount, a first
//     pass on a fresh mount and a repeated pass, in µs a file and as
//     ratios against the FUSE floor (bench/internal/floor: a go-fuse
//     server of the same tree in memory, same mount options, run as its
//     own process) and tmpfs (the tree pushed from), measured in the same
//     run.
//
// With -profile DIR (bench/scale.sh then builds depotfs with -tags pprof)
// it also saves, at each size, the server's heap profile after the
// pushes and after the walks, and a CPU profile of one more first pass of
// each walk on a fresh mount, for `go tool pprof`.
//
// The tree is /bK/dDDDD/fNNNNNNNN.txt: -per-dir files of 64 to 2048 bytes
// in each directory, so a directory's size stays the same as the depot
// grows and a walk's cost a file should too. It needs root (tmpfs, FUSE).
// With -seeded FILE it pushes nothing: it measures a depot written
// beforehand by bench/walk.sh -seed (see seeded.go), for sizes whose
// pushes would take hours.
//
// bench/scale.sh builds depotfs and runs it. The machine may be shared:
// the ratios are what to compare; the load average is printed with them.
package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/bench/internal/floor"
)

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	sizes := flag.String("files", "20000,100000,300000", "comma-separated depot sizes in files, growing")
	soak := flag.Bool("soak", os.Getenv("DEPOTFS_SOAK") == "1", "add 1,000,000 and 10,000,000 files to -files (also DEPOTFS_SOAK=1)")
	perDir := flag.Int("per-dir", 1000, "files in each directory")
	works := flag.String("works", "find,ls,cat", "walks to time: find, ls, cat")
	pause := flag.Duration("pause", 2*time.Second, "pause before a repeated pass")
	firsts := flag.Int("firsts", 3, "first passes of each walk, each on a fresh mount: the median is reported")
	work := flag.String("dir", "", "work `dir`ectory (default: a new one under /var/tmp)")
	profile := flag.String("profile", "", "save heap and CPU profiles of the server in this `dir`ectory (needs depotfs built with -tags pprof)")
	floorTree := flag.Int("floor-serve", -1, "internal: serve the floor's tree of this many files at -floor-mount")
	floorMount := flag.String("floor-mount", "", "internal: where -floor-serve mounts")
	seededDB := flag.String("seeded", "", "measure the bolt depot in this `file`, of -files files, written by bench/walk.sh -seed, instead of pushing (see seeded.go)")
	restarts := flag.Int("restarts", 5, "with -seeded: restarts to time")
	seededPush := flag.Int("seeded-push", 0, "with -seeded: files to push into the depot after the walks (it keeps them), to measure memory after pushes and a snapshot")
	flag.Parse()
	log.SetFlags(0)
	if *floorTree >= 0 {
		serveFloor(*floorMount, *floorTree, *perDir)
		return
	}
	if os.Geteuid() != 0 {
		log.Fatal("scalebench needs root (tmpfs and FUSE mounts)")
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			log.Fatalf("-files: %v", err)
		}
		ns = append(ns, n)
	}
	if *soak {
		ns = append(ns, 1_000_000, 10_000_000)
	}
	dir := *work
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("/var/tmp", "scalebench-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	b := &bench{bin: *bin, self: self, dir: dir, perDir: *perDir, pause: *pause, firsts: max(*firsts, 1), works: strings.Split(*works, ",")}
	if *profile != "" {
		if err := os.MkdirAll(*profile, 0o755); err != nil {
			log.Fatal(err)
		}
		// Every server this run starts inherits the address; one runs at
		// a time.
		addr := freeAddr()
		os.Setenv("DEPOTFS_PPROF", addr)
		b.profDir, b.pprof = *profile, "http://"+addr+"/debug/pprof/"
	}
	if *seededDB != "" {
		if len(ns) != 1 {
			log.Fatal("-seeded: -files must be the one size the depot holds")
		}
		b.seeded(*seededDB, ns[0], max(*restarts, 1), *seededPush)
		return
	}
	b.run(ns)
}

type bench struct {
	bin, self, dir string
	perDir, firsts int
	pause          time.Duration
	works          []string
	src            string // the tmpfs the tree is pushed from: the tmpfs baseline
	db, mnt        string
	profDir, pprof string // -profile: where to save profiles, the server's pprof URL
	maxStore       string // --max-store-size of the next start; "": 1TiB
	blobs          string // the blob cache directory
}

// row is what one size measured.
type row struct {
	n                       int
	pushRate                float64
	anon, rssFile, heap, db int64 // after the pushes
	anonWalk, heapWalk      int64 // after the walks
	restart, snapshot       time.Duration
	nearLimit               time.Duration                  // a write near the store limit, with the snapshots
	nearLimitOK             bool                           // whether that write was accepted
	nearFree                time.Duration                  // the same write without the snapshots
	nearFreeOK              bool                           // whether that write was accepted
	walks                   map[string][3][2]time.Duration // work: depotfs, floor, tmpfs × first, repeated
	cpu                     map[string][2]time.Duration    // work: the server's CPU time in a first pass, depotfs and floor
	loadBefore, loadAfter   string
}

func (b *bench) run(ns []int) {
	b.src = filepath.Join(b.dir, "src")
	b.db = filepath.Join(b.dir, "depot.db")
	b.blobs = filepath.Join(b.dir, "blobs")
	b.mnt = filepath.Join(b.dir, "mnt")
	if err := os.MkdirAll(b.src, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", b.src, "tmpfs", 0, "size=80%"); err != nil {
		log.Fatalf("mount tmpfs: %v", err)
	}
	defer syscall.Unmount(b.src, syscall.MNT_DETACH)
	// Interrupted, leave no mount behind (the servers get SIGTERM as
	// this process ends, and unmount; the tmpfs is this process's).
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		for _, m := range []string{b.mnt, filepath.Join(b.dir, "floor"), b.src} {
			syscall.Unmount(m, syscall.MNT_DETACH)
		}
		os.Exit(1)
	}()

	fmt.Printf("scalebench: %s, kernel %s, %d CPUs, %d files a directory; load average at start: %s\n",
		time.Now().UTC().Format(time.RFC3339), kernel(), runtime.NumCPU(), b.perDir, loadavg())
	d := b.start()
	time.Sleep(b.pause)
	emptyAnon, _ := d.rss()
	emptyHeap := d.heap()
	fmt.Printf("empty server: RssAnon %s, heap in use %s\n\n", mib(emptyAnon), mib(emptyHeap))

	var (
		rows  []row
		snaps []string
	)
	have := 0
	for _, n := range ns {
		if n <= have {
			log.Fatalf("-files must grow: %d after %d", n, have)
		}
		r := row{n: n, walks: map[string][3][2]time.Duration{}, cpu: map[string][2]time.Duration{}, loadBefore: loadavg()}
		if have > 0 {
			// A fresh server for the pushes: the one that walked the
			// last size holds the nodes of every file the kernel still
			// knows, which the memory after the pushes would count.
			d.stop()
			d, _ = b.restart()
		}
		took := b.push(d, have, n)
		r.pushRate = float64(n-have) / took.Seconds()
		have = n
		// The server at rest: the store has flushed what the pushes left,
		// and the server given back the heap they grew (two seconds idle).
		time.Sleep(max(b.pause, 4*time.Second))
		r.anon, r.rssFile = d.rss()
		r.heap = d.heap()
		r.db = size(b.db)
		b.save("heap?gc=1", fmt.Sprintf("heap-push-%d.pb.gz", n))
		snaps = append(snaps, fmt.Sprintf("scale%d", n))
		r.snapshot = d.snapshot(snaps[len(snaps)-1])
		r.nearLimit, r.nearLimitOK = b.nearLimit(d)
		r.nearFree, r.nearFreeOK = b.nearLimitFree(snaps)
		d, r.restart = b.restart()
		for _, w := range b.works {
			cmd, ok := walkCmd[w]
			if !ok {
				log.Fatalf("-works: unknown %q", w)
			}
			// First passes: each on a fresh server (mount) and a fresh
			// floor, alternating, the median of -firsts; the repeated
			// passes on the last of them.
			var t [3][2]time.Duration
			var dFirst, fFirst, dCPU, fCPU []time.Duration
			for k := range b.firsts {
				d.stop()
				d, _ = b.restart()
				wall, cpu := runOn(fmt.Sprintf(cmd, b.mnt), d.cmd.Process.Pid)
				dFirst, dCPU = append(dFirst, wall), append(dCPU, cpu)
				f := b.startFloor(n)
				wall, cpu = runOn(fmt.Sprintf(cmd, f.mnt), f.cmd.Process.Pid)
				fFirst, fCPU = append(fFirst, wall), append(fCPU, cpu)
				if k == b.firsts-1 {
					t[1][1] = b.repeated(fmt.Sprintf(cmd, f.mnt))
				}
				f.stop()
			}
			if b.pprof != "" {
				// One more first pass, profiled: the timed ones are not.
				d.stop()
				d, _ = b.restart()
				secs := int(benchd.Quantile(dFirst, 0.5).Seconds()) + 2
				done := make(chan struct{})
				go func() {
					defer close(done)
					b.save(fmt.Sprintf("profile?seconds=%d", secs), fmt.Sprintf("cpu-%s-%d.pb.gz", w, n))
				}()
				run(fmt.Sprintf(cmd, b.mnt))
				<-done
			}
			t[0][1] = b.repeated(fmt.Sprintf(cmd, b.mnt))
			t[0][0], t[1][0] = benchd.Quantile(dFirst, 0.5), benchd.Quantile(fFirst, 0.5)
			r.anonWalk, _ = d.rss()
			r.heapWalk = d.heap()
			tf, tr := b.twice(fmt.Sprintf(cmd, b.src))
			t[2][0], t[2][1] = min(tf, tr), min(tf, tr)
			r.walks[w] = t
			r.cpu[w] = [2]time.Duration{benchd.Quantile(dCPU, 0.5), benchd.Quantile(fCPU, 0.5)}
		}
		b.save("heap?gc=1", fmt.Sprintf("heap-walks-%d.pb.gz", n))
		r.loadAfter = loadavg()
		rows = append(rows, r)
		b.print(rows, emptyAnon, emptyHeap)
	}
	d.stop()
}

var walkCmd = map[string]string{
	"find": "find %s -type f >/dev/null",
	"ls":   "ls -lR %s >/dev/null",
	"cat":  "find %s -type f -exec cat {} + >/dev/null",
}

// print prints the growth table and the walk table of every size so far
// (each size reprints both, so an interrupted run keeps what it measured).
func (b *bench) print(rows []row, emptyAnon, emptyHeap int64) {
	fmt.Printf("\n| files | push files/s | RssAnon after push (Δ empty) | RssFile | heap in use (Δ empty) | db size | B a file | restart to ready | snapshot create | write near the limit, snapshots held | without them | RssAnon after walks (Δ empty) | heap after walks | load before/after |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	verdict := func(ok bool) string {
		if ok {
			return "accepted"
		}
		return "refused"
	}
	for _, r := range rows {
		fmt.Printf("| %d | %.0f | %s (%+.0f MiB) | %s | %s (%+.0f MiB) | %s | %.0f | %s | %s | %s %s | %s %s | %s (%+.0f MiB) | %s | %s / %s |\n",
			r.n, r.pushRate, mib(r.anon), float64(r.anon-emptyAnon)/(1<<20), mib(r.rssFile), mib(r.heap), float64(r.heap-emptyHeap)/(1<<20),
			mib(r.db), float64(r.db)/float64(r.n), secs(r.restart), secs(r.snapshot), secs(r.nearLimit), verdict(r.nearLimitOK),
			secs(r.nearFree), verdict(r.nearFreeOK),
			mib(r.anonWalk), float64(r.anonWalk-emptyAnon)/(1<<20), mib(r.heapWalk), r.loadBefore, r.loadAfter)
	}
	fmt.Printf("\nWalks over the mount: µs a file; ratio = depotfs / floor and depotfs / tmpfs in the same run; server CPU: the CPU time the server (depotfs, the floor) spent during the first pass, median, in µs a file. First: median of %d runs, each on a fresh mount (depotfs restarted, a fresh floor process), the two alternating; repeated: best of 3, each %s after the previous; tmpfs: best of 4.\n\n", b.firsts, b.pause)
	fmt.Printf("| files | work | depotfs first | floor first | tmpfs | ×floor | ×tmpfs | depotfs repeated | floor repeated | ×floor | ×tmpfs | server CPU first, depotfs / floor | ×floor |\n")
	fmt.Printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		for _, w := range b.works {
			t := r.walks[w]
			us := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Microseconds())/float64(r.n)) }
			c := r.cpu[w]
			fmt.Printf("| %d | %s | %s | %s | %s | **%.2f×** | %.2f× | %s | %s | **%.2f×** | %.2f× | %s / %s | %.2f× |\n", r.n, w,
				us(t[0][0]), us(t[1][0]), us(t[2][0]), ratio(t[0][0], t[1][0]), ratio(t[0][0], t[2][0]),
				us(t[0][1]), us(t[1][1]), ratio(t[0][1], t[1][1]), ratio(t[0][1], t[2][1]),
				us(c[0]), us(c[1]), ratio(c[0], c[1]))
		}
	}
	fmt.Println()
}

// save saves the server's profile at pprof path q into file name in the
// -profile directory; without -profile it does nothing.
func (b *bench) save(q, name string) {
	if b.pprof == "" {
		return
	}
	resp, err := http.Get(b.pprof + q)
	if err != nil {
		log.Fatalf("profile: %v (is depotfs built with -tags pprof?)", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		log.Fatalf("profile %s: %s", q, resp.Status)
	}
	f, err := os.Create(filepath.Join(b.profDir, name))
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, resp.Body); err != nil {
		log.Fatalf("profile %s: %v", q, err)
	}
}

// push writes files have..n-1 into the tmpfs and pushes each new
// directory with `depotfs push`, returning the time the pushes took.
func (b *bench) push(d *daemon, have, n int) time.Duration {
	var dirs []string
	seen := map[string]bool{}
	for i := have; i < n; i++ {
		p, data := floor.File(i, b.perDir)
		full := filepath.Join(b.src, p)
		if dd := filepath.Dir(full); !seen[dd] {
			seen[dd] = true
			dirs = append(dirs, dd)
			if err := os.MkdirAll(dd, 0o755); err != nil {
				log.Fatal(err)
			}
		}
		if err := os.WriteFile(full, data, 0o444); err != nil {
			log.Fatal(err)
		}
	}
	// The new directories, one push for those of each /bK: a push of /bK
	// would send again the directories an earlier size filled.
	byParent := map[string][]string{}
	var parents []string
	for _, dd := range dirs {
		p := filepath.Dir(dd)
		if byParent[p] == nil {
			parents = append(parents, p)
		}
		byParent[p] = append(byParent[p], dd)
	}
	return benchd.Timed(func() {
		for _, p := range parents {
			rel, _ := filepath.Rel(b.src, p)
			args := append([]string{"push", "--url", d.url, "--to", "/" + rel}, byParent[p]...)
			if out, err := exec.Command(b.bin, args...).CombinedOutput(); err != nil {
				log.Fatalf("push %s: %v\n%s", p, err, out)
			}
		}
	})
}

// daemon is one running depotfs serve.
type daemon struct {
	cmd     *exec.Cmd
	url     string
	metrics string
	bin     string
}

func (b *bench) start() *daemon {
	metrics := freeAddr()
	cmd, url := benchd.Serve(b.bin, "--db", b.db, "--mount", b.mnt, "--max-store-size", cmp.Or(b.maxStore, "1TiB"),
		"--metrics-listen", metrics, "--blob-cache-dir", b.blobs,
		// In the work directory, not beside a -seeded database.
		"--audit-log", filepath.Join(b.dir, "audit.log"))
	return &daemon{cmd: cmd, url: url, metrics: "http://" + metrics + "/metrics", bin: b.bin}
}

// restart starts the server and returns how long it took to be ready.
func (b *bench) restart() (*daemon, time.Duration) {
	var d *daemon
	took := benchd.Timed(func() { d = b.start() })
	return d, took
}

// rss returns the server's RssAnon and RssFile in bytes.
func (d *daemon) rss() (anon, file int64) {
	return status(d.cmd.Process.Pid, "RssAnon"), status(d.cmd.Process.Pid, "RssFile")
}

// heap is the server's Go heap in use, from its metrics.
func (d *daemon) heap() int64 { return d.metric("go_memstats_heap_inuse_bytes") }

// metric is the value of the server's metric name (without labels).
func (d *daemon) metric(name string) int64 {
	resp, err := http.Get(d.metrics)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int64(f)
		}
	}
	log.Fatalf("no %s in the metrics", name)
	return 0
}

// nearLimit stops d and times pushNear just above the content d held.
func (b *bench) nearLimit(d *daemon) (time.Duration, bool) {
	stored := d.metric("depotfs_store_stored_bytes")
	d.stop()
	return b.pushNear(stored)
}

// nearLimitFree times the write nearLimit does without the snapshots
// named snaps: on a copy of the database (stopped) with them deleted, so
// the depot the walks read keeps every file's content.
func (b *bench) nearLimitFree(snaps []string) (time.Duration, bool) {
	db, blobs := b.db, filepath.Join(b.dir, "blobs")
	b.db, b.blobs = filepath.Join(b.dir, "free.db"), filepath.Join(b.dir, "free-blobs")
	defer func() {
		os.Remove(b.db)
		os.RemoveAll(b.blobs)
		b.db, b.blobs = db, blobs
	}()
	if out, err := exec.Command("cp", db, b.db).CombinedOutput(); err != nil {
		log.Fatalf("copy the database: %v\n%s", err, out)
	}
	d := b.start()
	for _, s := range snaps {
		if out, err := exec.Command(b.bin, "snapshot", "delete", "--url", d.url, s).CombinedOutput(); err != nil {
			log.Fatalf("snapshot delete %s: %v\n%s", s, err, out)
		}
	}
	stored := d.metric("depotfs_store_stored_bytes")
	d.stop()
	return b.pushNear(stored)
}

// pushNear starts the server with --max-store-size 512 KiB above stored,
// times a push of one 1 MiB file there, and stops that server. It
// returns how long the push took to be answered and whether it was
// accepted.
func (b *bench) pushNear(stored int64) (time.Duration, bool) {
	f := filepath.Join(b.dir, "near-limit.bin")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(rand.Uint32())
	}
	if err := os.WriteFile(f, data, 0o644); err != nil {
		log.Fatal(err)
	}
	defer os.Remove(f)
	b.maxStore = strconv.FormatInt(stored+512<<10, 10)
	near := b.start()
	b.maxStore = ""
	defer near.stop()
	var (
		out []byte
		err error
	)
	took := benchd.Timed(func() {
		out, err = exec.Command(b.bin, "push", "--url", near.url, "--to", "/near-limit", f).CombinedOutput()
	})
	if err != nil { // say why, so a refusal for another reason shows
		log.Printf("the write near the store limit (%s) was refused:\n%s", filepath.Base(b.db), out)
	}
	return took, err == nil
}

// snapshot creates a snapshot of the whole tree and returns how long the
// command took.
func (d *daemon) snapshot(name string) time.Duration {
	return benchd.Timed(func() {
		if out, err := exec.Command(d.bin, "snapshot", "create", "--url", d.url, "--timeout", "5m", name).CombinedOutput(); err != nil {
			log.Fatalf("snapshot create: %v\n%s", err, out)
		}
	})
}

// stop ends the server with SIGTERM (it unmounts) and waits for it.
func (d *daemon) stop() {
	stopProc(d.cmd)
}

func stopProc(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// floorProc is the floor server, a process of its own.
type floorProc struct {
	cmd *exec.Cmd
	mnt string
}

// startFloor runs this program as the floor server of the first n files
// and waits until it has mounted.
func (b *bench) startFloor(n int) *floorProc {
	mnt := filepath.Join(b.dir, "floor")
	cmd := exec.Command(b.self, "-floor-serve", strconv.Itoa(n), "-floor-mount", mnt, "-per-dir", strconv.Itoa(b.perDir))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		log.Fatalf("floor server: %q %v", line, err)
	}
	go io.Copy(io.Discard, out)
	return &floorProc{cmd: cmd, mnt: mnt}
}

func (f *floorProc) stop() { stopProc(f.cmd) }

// serveFloor builds the tree of n files in memory, mounts it at mnt, says
// "ready" on stdout and serves until SIGTERM.
func serveFloor(mnt string, n, perDir int) {
	t := floor.New(time.Now())
	for i := range n {
		p, data := floor.File(i, perDir)
		t.Add(p, data)
	}
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		log.Fatal(err)
	}
	srv, err := floor.Mount(mnt, t)
	if err != nil {
		log.Fatal(err)
	}
	runtime.GC()
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		<-sig
		if err := srv.Unmount(); err != nil {
			syscall.Unmount(mnt, syscall.MNT_DETACH)
		}
	}()
	srv.Wait()
}

// twice runs cmd once (the first pass), then the repeated passes.
func (b *bench) twice(cmd string) (first, repeated time.Duration) {
	first = run(cmd)
	return first, b.repeated(cmd)
}

// repeated runs cmd three times a pause apart and returns the fastest.
func (b *bench) repeated(cmd string) (best time.Duration) {
	for range 3 {
		time.Sleep(b.pause)
		if d := run(cmd); best == 0 || d < best {
			best = d
		}
	}
	return best
}

// runOn runs cmd and returns how long it took and the CPU time the
// process pid (the server it walks) spent meanwhile: on a loaded machine
// the wall time is mostly waiting for a core, the CPU time is not.
func runOn(cmd string, pid int) (wall, cpu time.Duration) {
	before := cpuTime(pid)
	wall = run(cmd)
	return wall, cpuTime(pid) - before
}

// cpuTime is the CPU time the threads of process pid have run, from
// their schedstat (nanoseconds, where /proc/PID/stat counts ticks).
func cpuTime(pid int) time.Duration {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	if err != nil {
		log.Fatal(err)
	}
	var ns int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread ended
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			v, _ := strconv.ParseInt(f[0], 10, 64)
			ns += v
		}
	}
	return time.Duration(ns)
}

func run(cmd string) time.Duration {
	return benchd.Timed(func() {
		if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
			log.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	})
}

// status returns a field of /proc/PID/status in bytes.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(v)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func size(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		log.Fatal(err)
	}
	return fi.Size()
}

func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

func mib(n int64) string               { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
func secs(d time.Duration) string      { return fmt.Sprintf("%.3f s", d.Seconds()) }
func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
