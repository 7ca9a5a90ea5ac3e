// Command nfsbench measures depotfs's two doors without FUSE, the NFSv3
// export and WebDAV, against the FUSE mount and tmpfs on one tree (20,000
// small files and one 256 MiB file), side by side in one run of one
// server, and prints the ratios to the mount:
//
//   - a walk, first pass (the database dropped from the page cache before
//     each door's pass): find through a fresh mount and on tmpfs; libnfs's
//     nfs-ls -R (one process); rclone lsf -R over WebDAV; a PROPFIND of
//     each directory from this process (eight at a time, as rclone's
//     checkers), which rclone's pacing (its
//     webdav backend starts at most one request per 10 ms) does not
//     bound. Then the same walks repeated, and go-nfs-client's
//     READDIRPLUS of every directory;
//   - a cat of every small file, first pass: find -exec cat through the
//     mount; go-nfs-client LOOKUP and READ of each file, one after another,
//     in this process; rclone cat (one GET after another); then a GET of
//     each from this process;
//   - a sequential read of the large file, cold (the database dropped from
//     the page cache before each): dd through the mount (whose first read
//     of a large file fills its passthrough blob cache), nfs-cat through
//     NFS, rclone cat and curl over WebDAV; then the mount's read again,
//     from its blob cache.
//
// It needs root (tmpfs and FUSE mounts), libnfs-utils, rclone, curl and a
// depotfs binary; bench/nfs.sh builds one and runs it. The machine may be
// shared: each figure says whether it is one run or the best of three, the
// load average is printed before and after, and a second table gives the
// CPU time each pass cost the server and the client, which does not
// depend on the machine's other work as wall time does.
package main

import (
	"context"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	nfsc "github.com/willscott/go-nfs-client/nfs"
	"github.com/willscott/go-nfs-client/nfs/rpc"
	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	files := flag.Int("files", 20000, "small files of the tree")
	bigMiB := flag.Int("big", 256, "size in MiB of the tree's large file")
	flag.Parse()
	log.SetFlags(0)
	if os.Geteuid() != 0 {
		log.Fatal("nfsbench needs root (tmpfs and FUSE mounts)")
	}
	for _, p := range []string{"nfs-ls", "nfs-cat", "rclone", "curl"} {
		if _, err := exec.LookPath(p); err != nil {
			log.Fatalf("%s is not installed (Debian: apt-get install libnfs-utils rclone curl)", p)
		}
	}
	dir, err := os.MkdirTemp("", "nfsbench-")
	must(err)
	defer os.RemoveAll(dir)
	fmt.Printf("nfsbench: %s, kernel %s, %d CPUs, load %s; the depotfs binary as shipped (no race detector).\n\n",
		time.Now().UTC().Format(time.RFC3339), kernel(), runtime.NumCPU(), load())
	bench(*bin, dir, *files, *bigMiB)
	fmt.Printf("\nload average after the run: %s\n", load())
}

func bench(bin, root string, n, bigMiB int) {
	tmp := filepath.Join(root, "tmpfs")
	mountTmpfs(tmp, bigMiB+256)
	defer syscall.Unmount(tmp, 0)
	db := filepath.Join(root, "depot.db")
	st, err := bolt.Open(db, nil)
	must(err)
	batch := make([]store.PutRequest, 0, 1000)
	var dirs []string
	for i := range n {
		p, data := smallFile(i)
		must(os.MkdirAll(filepath.Dir(filepath.Join(tmp, p)), 0o755))
		must(os.WriteFile(filepath.Join(tmp, p), data, 0o444))
		batch = append(batch, store.PutRequest{Path: p, Data: data})
		if i < 100 {
			dirs = append(dirs, filepath.Dir(p))
		}
		if len(batch) == cap(batch) || i == n-1 {
			_, err := st.PutBatch(context.Background(), batch)
			must(err)
			batch = batch[:0]
		}
	}
	must(st.Close())
	big := make([]byte, bigMiB<<20)
	rand.NewChaCha8([32]byte{2}).Read(big)
	must(os.MkdirAll(filepath.Join(tmp, "big"), 0o755))
	bigSrc := filepath.Join(tmp, "big", "big.bin")
	must(os.WriteFile(bigSrc, big, 0o444))

	mnt := filepath.Join(root, "mnt")
	args := []string{"--db", db, "--mount", mnt, "--max-store-size", "8GiB", "--max-file-size", "2GiB"}
	cmd, url := benchd.Serve(bin, args...)
	out, err := exec.Command(bin, "push", "--url", url, "--to", "/", filepath.Join(tmp, "big")).CombinedOutput()
	if err != nil {
		log.Fatalf("push: %v\n%s", err, out)
	}
	stop(cmd)
	// A fresh server and mount: the mount's first pass is its first; the
	// NFS export starts with no handle handed out.
	port := freePort()
	cmd, url = benchd.Serve(bin, append(args, "--nfs", "127.0.0.1:"+port)...)
	pid := cmd.Process.Pid
	defer func() { stop(cmd); syscall.Unmount(mnt, syscall.MNT_DETACH) }()
	nfsURL := func(p string) string {
		return "nfs://127.0.0.1" + p + "?version=3&nfsport=" + port + "&mountport=" + port
	}
	dav := strings.TrimSuffix(url, "/mcp") + "/dav/"
	rclone := "rclone --config /dev/null --webdav-url " + dav + " "
	waitPort(port)

	fmt.Printf("| %d small files, one %d MiB file | tmpfs (best of 3) | FUSE mount | NFS | WebDAV | NFS / mount | WebDAV / mount |\n|---|---|---|---|---|---|---|\n", n, bigMiB)
	row := func(what string, t, m, nf, wd time.Duration) {
		fmt.Printf("| %s | %s | %s | %s | %s | **%.2f×** | **%.2f×** |\n", what, secs(t), secs(m), secs(nf), secs(wd), ratio(nf, m), ratio(wd, m))
	}
	findMnt := "find " + mnt + "/d* -type f >/dev/null"
	nfsWalk := "nfs-ls -R '" + nfsURL("/") + "' >/dev/null"
	davWalk := rclone + "lsf -R --files-only --include '/d*/**' :webdav: >/dev/null"
	tFind := best(func() { run("find " + tmp + "/d* -type f >/dev/null") })
	dropCache(db)
	mFind, mFindCPU := measure(pid, func() { run(findMnt) })
	dropCache(db)
	nWalk, nWalkCPU := measure(pid, func() { run(nfsWalk) })
	dropCache(db)
	rWalk, rWalkCPU := measure(pid, func() { run(davWalk) })
	row("walk, first pass (find; nfs-ls -R; rclone lsf -R)", tFind, mFind, nWalk, rWalk)
	dropCache(db)
	pWalk, pWalkCPU := measure(pid, func() { propfindWalk(dav, n) })
	fmt.Printf("| walk, first pass, WebDAV without rclone's pacing: a PROPFIND (Depth 1) of / and of each directory, eight at a time, in this process | | | | %s | | **%.2f×** |\n", secs(pWalk), ratio(pWalk, mFind))
	row("walk, repeated (best of 3)", tFind, best(func() { run(findMnt) }), best(func() { run(nfsWalk) }), best(func() { run(davWalk) }))
	c := dial(port)
	gWalk := best(func() {
		for _, d := range dirs {
			if _, err := c.ReadDirPlus(d); err != nil {
				log.Fatalf("readdirplus %s: %v", d, err)
			}
		}
	})
	dWalk := best(func() { propfindWalk(dav, n) })
	fmt.Printf("| walk, repeated, in this process: go-nfs-client READDIRPLUS of each directory; the PROPFINDs above (best of 3) | | | %s | %s | **%.2f×** | **%.2f×** |\n",
		secs(gWalk), secs(dWalk), ratio(gWalk, mFind), ratio(dWalk, mFind))

	tCat := best(func() { run("find " + tmp + "/d* -type f -exec cat {} + >/dev/null") })
	mCat, mCatCPU := measure(pid, func() { run("find " + mnt + "/d* -type f -exec cat {} + >/dev/null") })
	gCat, gCatCPU := measure(pid, func() {
		buf := make([]byte, 4096)
		for i := range n {
			p, data := smallFile(i)
			f, err := c.Open(p)
			if err != nil {
				log.Fatalf("open %s: %v", p, err)
			}
			got, err := io.ReadFull(f, buf[:len(data)])
			if err != nil || got != len(data) || string(buf[:got]) != string(data) {
				log.Fatalf("read %s: %d bytes, %v", p, got, err)
			}
			f.Close()
		}
	})
	rCat, rCatCPU := measure(pid, func() { run(rclone + "cat --include '/d*/**' :webdav: >/dev/null") })
	row("cat every small file, first pass (find -exec cat; go-nfs-client LOOKUP and READ; rclone cat, one after another)", tCat, mCat, gCat, rCat)
	dCat, dCatCPU := measure(pid, func() { getEach(dav, n) })
	fmt.Printf("| cat every small file again, WebDAV without rclone's pacing: a GET of each, one after another, in this process | | | | %s | | **%.2f×** |\n", secs(dCat), ratio(dCat, mCat))

	tBig := best(func() { run("dd if=" + bigSrc + " of=/dev/null bs=1M status=none") })
	// One read of the whole database first: on a virtual machine the
	// first read of a block comes from the host's disk and later ones from
	// its cache, which dropping this guest's page cache does not empty;
	// without it the first reader (the mount) alone would pay the disk.
	run("dd if=" + db + " of=/dev/null bs=1M status=none")
	dropCache(db)
	mBig, mBigCPU := measure(pid, func() { run("dd if=" + filepath.Join(mnt, "big", "big.bin") + " of=/dev/null bs=1M status=none") })
	dropCache(db)
	nBig, nBigCPU := measure(pid, func() { run("nfs-cat '" + nfsURL("/big/big.bin") + "' >/dev/null") })
	dropCache(db)
	rBig, rBigCPU := measure(pid, func() { run(rclone + "cat :webdav:big/big.bin >/dev/null") })
	dropCache(db)
	cBig, cBigCPU := measure(pid, func() { run("curl -sS -o /dev/null " + dav + "big/big.bin") })
	fmt.Printf("| %d MiB sequential read, cold (dd; nfs-cat; rclone cat, curl): throughput, and ratio of throughput to the mount's | %s | %s | %s | %s (curl %s) | **%.2f×** | **%.2f×** (curl %.2f×) |\n", bigMiB,
		rate(len(big), tBig), rate(len(big), mBig), rate(len(big), nBig), rate(len(big), rBig), rate(len(big), cBig),
		ratio(mBig, nBig), ratio(mBig, rBig), ratio(mBig, cBig))
	// The mount's first read of a large file fills its passthrough blob
	// cache (a copy to disk); later opens read that copy at disk speed.
	mWarm := best(func() { run("dd if=" + filepath.Join(mnt, "big", "big.bin") + " of=/dev/null bs=1M status=none") })
	fmt.Printf("| %d MiB sequential read again, the mount's blob cache filled (best of 3) | | %s | | | **%.2f×** | **%.2f×** |\n", bigMiB,
		rate(len(big), mWarm), ratio(mWarm, nBig), ratio(mWarm, rBig))
	fmt.Printf("| server RSS after the runs | | | %s | | | |\n", rssString(cmd.Process.Pid))

	// CPU time does not depend on what else the machine runs, as wall
	// time does on a shared machine (and a benchmark run with nice).
	fmt.Printf("\n| CPU of the passes above: server + client (the client's own process and its children) | FUSE mount | NFS | WebDAV: rclone | WebDAV: this process (curl for the large file) |\n|---|---|---|---|---|\n")
	fmt.Printf("| walk, first pass | %s | %s | %s | %s |\n", mFindCPU, nWalkCPU, rWalkCPU, pWalkCPU)
	fmt.Printf("| cat every small file | %s | %s | %s | %s |\n", mCatCPU, gCatCPU, rCatCPU, dCatCPU)
	fmt.Printf("| %d MiB sequential read, cold | %s | %s | %s | %s |\n", bigMiB, mBigCPU, nBigCPU, rBigCPU, cBigCPU)
}

// cpuUse is the CPU time a pass cost the server and the client.
type cpuUse struct{ server, client time.Duration }

func (c cpuUse) String() string {
	return fmt.Sprintf("%.2f + %.2f s", c.server.Seconds(), c.client.Seconds())
}

// measure runs fn and returns its wall time and the CPU time it cost the
// server (process pid) and this process with the children it waited for
// (the shell and the client program it ran).
func measure(pid int, fn func()) (time.Duration, cpuUse) {
	s0, c0 := serverCPU(pid), clientCPU()
	d := benchd.Timed(fn)
	return d, cpuUse{server: serverCPU(pid) - s0, client: clientCPU() - c0}
}

// serverCPU is the user and system time process pid has used.
func serverCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(err)
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// clientCPU is the user and system time of this process and of the
// children it has waited for.
func clientCPU() time.Duration {
	var self, children unix.Rusage
	must(unix.Getrusage(unix.RUSAGE_SELF, &self))
	must(unix.Getrusage(unix.RUSAGE_CHILDREN, &children))
	t := func(r unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return t(self) + t(children)
}

// smallFile is small file i of the tree: 64 to 2048 bytes in 100
// directories, as bench/mountbench and bench/doorbench make them.
func smallFile(i int) (string, []byte) {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	data := make([]byte, 64+r.IntN(2048-64+1))
	for j := range data {
		data[j] = 'a' + byte(r.IntN(26))
	}
	return fmt.Sprintf("/d%03d/f%06d.txt", i%100, i), data
}

// propfindWalk lists the tree over WebDAV as a client without rclone's
// pacing (its webdav backend starts at most one request per 10 ms): a
// PROPFIND of depth 1 of the root, then of each directory it names, eight
// at a time as rclone's checkers list them, checking that n files are
// listed.
func propfindWalk(dav string, n int) {
	host := strings.TrimSuffix(dav, "/dav/")
	var dirs []string
	for _, d := range davList(dav) {
		if strings.HasSuffix(d, "/") && strings.HasPrefix(path.Base(d), "d") {
			dirs = append(dirs, host+d)
		}
	}
	var files atomic.Int64
	var wg sync.WaitGroup
	next := make(chan string)
	for range 8 {
		wg.Go(func() {
			for d := range next {
				files.Add(int64(len(davList(d))))
			}
		})
	}
	for _, d := range dirs {
		next <- d
	}
	close(next)
	wg.Wait()
	if files.Load() != int64(n) {
		log.Fatalf("WebDAV walk: %d files listed, want %d", files.Load(), n)
	}
}

// davList returns the hrefs a PROPFIND of depth 1 of url lists, without
// url's own.
func davList(url string) []string {
	req, err := http.NewRequest("PROPFIND", url, nil)
	must(err)
	req.Header.Set("Depth", "1")
	resp, err := http.DefaultClient.Do(req)
	must(err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		log.Fatalf("PROPFIND %s: %s", url, resp.Status)
	}
	var ms struct {
		Responses []struct {
			Href string `xml:"href"`
		} `xml:"response"`
	}
	must(xml.NewDecoder(resp.Body).Decode(&ms))
	var hrefs []string
	for _, r := range ms.Responses[1:] {
		hrefs = append(hrefs, r.Href)
	}
	return hrefs
}

// getEach reads each small file with a GET, one after another on one
// connection, checking its bytes.
func getEach(dav string, n int) {
	for i := range n {
		p, data := smallFile(i)
		resp, err := http.Get(dav + strings.TrimPrefix(p, "/"))
		must(err)
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(got) != string(data) {
			log.Fatalf("GET %s: %s, %d bytes, %v", p, resp.Status, len(got), err)
		}
	}
}

// dial mounts the export's root with go-nfs-client.
func dial(port string) *nfsc.Target {
	p, _ := strconv.Atoi(port)
	c, err := nfsc.DialServiceAtPort("127.0.0.1", p)
	must(err)
	t, err := (&nfsc.Mount{Client: c}).Mount("/", rpc.AuthNull)
	must(err)
	return t
}

// freePort returns a loopback port nothing listens on now.
func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitPort waits until the export accepts connections.
func waitPort(port string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			log.Fatalf("the NFS export did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends a server with SIGTERM and waits for it.
func stop(cmd *exec.Cmd) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

// best runs fn three times and returns the fastest: the run least
// disturbed on a shared machine.
func best(fn func()) time.Duration {
	var b time.Duration
	for range 3 {
		if d := benchd.Timed(fn); b == 0 || d < b {
			b = d
		}
	}
	return b
}

// run runs a shell command, stopping the program if it fails.
func run(cmd string) {
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		log.Fatalf("%s: %v\n%s", cmd, err, out)
	}
}

// dropCache asks the kernel to drop the file's pages from the page cache.
func dropCache(p string) {
	f, err := os.Open(p)
	must(err)
	defer f.Close()
	must(f.Sync())
	must(unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED))
}

// rssString is the server's resident memory, total and anonymous.
func rssString(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(err)
	v := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 {
			n, _ := strconv.Atoi(f[1])
			v[strings.TrimSuffix(f[0], ":")] = fmt.Sprintf("%.0f MB", float64(n)/1024)
		}
	}
	return fmt.Sprintf("%s (anonymous %s)", v["VmRSS"], v["RssAnon"])
}

func mountTmpfs(dir string, mib int) {
	must(os.MkdirAll(dir, 0o755))
	must(syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", mib)))
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func kernel() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return "?"
	}
	return unix.ByteSliceToString(u.Release[:])
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }
func secs(d time.Duration) string      { return fmt.Sprintf("%.3f s", d.Seconds()) }
func rate(n int, d time.Duration) string {
	return fmt.Sprintf("%.0f MiB/s", float64(n)/(1<<20)/d.Seconds())
}
