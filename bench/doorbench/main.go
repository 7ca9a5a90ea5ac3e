// Command doorbench measures depotfs's HTTP doors against baselines
// measured in the same run, and prints the ratios:
//
//   - a resource link: GET of a large file (100 MiB by default) through the
//     URL fs read hands out, against the same GET from a plain Go
//     http.FileServer serving the file from tmpfs (a process of its own,
//     like the server), and the server's RSS growth over those GETs;
//   - WebDAV through rclone's webdav backend, against the FUSE mount and
//     tmpfs, on one tree (20,000 small files and one 256 MiB file): a walk
//     (rclone lsf -R; find through the mount, its first pass on a fresh
//     mount), a cat of every small file, and a sequential read of the large
//     file (the mount's and WebDAV's cold reads, the database dropped from
//     the page cache before each).
//
// It needs root (tmpfs and FUSE mounts), rclone, and a depotfs binary;
// bench/doors.sh builds one and runs it. The machine may be shared: each
// figure says whether it is one run or the best of three.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/sys/unix"

	"github.com/depotfs/depotfs/bench/internal/benchd"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
)

func main() {
	bin := flag.String("depotfs", "depotfs", "depotfs `binary` to run")
	linkMiB := flag.Int("link", 100, "size in MiB of the file read through a resource link; 0 skips it")
	files := flag.Int("files", 20000, "small files of the WebDAV tree; 0 skips the WebDAV runs")
	bigMiB := flag.Int("big", 256, "size in MiB of the WebDAV tree's large file")
	serveDir := flag.String("serve-dir", "", "internal: serve this directory with http.FileServer and print the address")
	flag.Parse()
	log.SetFlags(0)
	if *serveDir != "" {
		fileServer(*serveDir)
		return
	}
	if os.Geteuid() != 0 {
		log.Fatal("doorbench needs root (tmpfs and FUSE mounts)")
	}
	dir, err := os.MkdirTemp("", "doorbench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fmt.Printf("doorbench: %s, kernel %s, %d CPUs, load %s; the depotfs binary as shipped (no race detector).\n\n",
		time.Now().UTC().Format(time.RFC3339), kernel(), runtime.NumCPU(), load())
	if *linkMiB > 0 {
		links(*bin, filepath.Join(dir, "link"), *linkMiB)
	}
	if *files > 0 {
		if _, err := exec.LookPath("rclone"); err != nil {
			log.Fatal("rclone is not installed (Debian: apt-get install rclone)")
		}
		webdav(*bin, filepath.Join(dir, "dav"), *files, *bigMiB)
	}
}

// fileServer serves dir with a plain http.FileServer on a free loopback
// port, printing the address on stdout, until it is killed.
func fileServer(dir string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ln.Addr().String())
	log.Fatal(http.Serve(ln, http.FileServer(http.Dir(dir))))
}

// links measures the GET of a resource link against http.FileServer.
func links(bin, root string, mib int) {
	tmp := filepath.Join(root, "tmpfs")
	mountTmpfs(tmp, mib+64)
	defer syscall.Unmount(tmp, 0)
	data := make([]byte, mib<<20)
	rand.NewChaCha8([32]byte{1}).Read(data)
	src := filepath.Join(tmp, "link.bin")
	must(os.WriteFile(src, data, 0o444))

	self, err := os.Executable()
	must(err)
	fs := exec.Command(self, "-serve-dir", tmp)
	fs.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := fs.StdoutPipe()
	must(err)
	must(fs.Start())
	defer fs.Process.Kill()
	var addr string
	_, err = fmt.Fscanln(out, &addr)
	must(err)

	cmd, url := benchd.Serve(bin, "--db", filepath.Join(root, "depot.db"), "--no-mount", "--tools", "guide,provider,fs",
		"--max-store-size", "8GiB", "--max-file-size", "2GiB")
	defer stop(cmd)
	pushFile(bin, url, src, "/")
	c := benchd.Connect(url, "doorbench")
	defer c.Close()
	req := mcp.CallToolRequest{}
	req.Params.Name = "read"
	req.Params.Arguments = map[string]any{"path": "link.bin"}
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		log.Fatalf("fs read: %v %+v", err, res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var reply struct {
		Link string `json:"link"`
	}
	must(json.Unmarshal(raw, &reply))
	if reply.Link == "" {
		log.Fatalf("fs read of %d MiB handed out no link: %s", mib, raw)
	}

	base := best(func() { get("http://"+addr+"/link.bin", len(data)) })
	before := rssKiB(cmd.Process.Pid)
	peak := before
	linked := best(func() {
		get(reply.Link, len(data))
		peak = max(peak, rssKiB(cmd.Process.Pid))
	})
	fmt.Printf("| GET of a %d MiB file, best of 3 | http.FileServer on tmpfs | depotfs resource link | ratio (time) | server RSS growth |\n|---|---|---|---|---|\n", mib)
	fmt.Printf("| whole file, Go client | %s (%s) | %s (%s) | **%.2f×** | %+d KiB |\n\n",
		secs(base), rate(len(data), base), secs(linked), rate(len(data), linked), ratio(linked, base), peak-before)
}

// get GETs u and checks the length of what came.
func get(u string, want int) {
	resp, err := http.Get(u)
	must(err)
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	must(err)
	if resp.StatusCode != 200 || n != int64(want) {
		log.Fatalf("GET %s: %d, %d bytes, want %d", u, resp.StatusCode, n, want)
	}
}

// webdav measures rclone over WebDAV against the mount and tmpfs.
func webdav(bin, root string, n, bigMiB int) {
	tmp := filepath.Join(root, "tmpfs")
	mountTmpfs(tmp, bigMiB+256)
	defer syscall.Unmount(tmp, 0)
	db := filepath.Join(root, "depot.db")
	st, err := bolt.Open(db, nil)
	must(err)
	batch := make([]store.PutRequest, 0, 1000)
	for i := range n {
		p, data := smallFile(i)
		must(os.MkdirAll(filepath.Dir(filepath.Join(tmp, p)), 0o755))
		must(os.WriteFile(filepath.Join(tmp, p), data, 0o444))
		batch = append(batch, store.PutRequest{Path: p, Data: data})
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
	cmd, url := benchd.Serve(bin, "--db", db, "--mount", mnt, "--max-store-size", "8GiB", "--max-file-size", "2GiB")
	pushFile(bin, url, filepath.Join(tmp, "big"), "/")
	stop(cmd)
	// A fresh server and mount: the mount's first pass is its first.
	cmd, url = benchd.Serve(bin, "--db", db, "--mount", mnt, "--max-store-size", "8GiB", "--max-file-size", "2GiB")
	defer func() { stop(cmd); syscall.Unmount(mnt, syscall.MNT_DETACH) }()
	dav := strings.TrimSuffix(url, "/mcp") + "/dav/"
	rclone := "rclone --config /dev/null --webdav-url " + dav + " "

	fmt.Printf("| %d small files, one %d MiB file | tmpfs (best of 3) | FUSE mount | rclone over WebDAV | WebDAV / mount |\n|---|---|---|---|---|\n", n, bigMiB)
	tFind := best(func() { run("find " + tmp + "/d* -type f >/dev/null") })
	mFind := timed("find " + mnt + "/d* -type f >/dev/null")
	rWalk := timed(rclone + "lsf -R --files-only --include '/d*/**' :webdav: >/dev/null")
	fmt.Printf("| walk, first pass (find; rclone lsf -R) | %s | %s | %s | **%.2f×** |\n", secs(tFind), secs(mFind), secs(rWalk), ratio(rWalk, mFind))
	mFind2 := best(func() { run("find " + mnt + "/d* -type f >/dev/null") })
	rWalk2 := best(func() { run(rclone + "lsf -R --files-only --include '/d*/**' :webdav: >/dev/null") })
	fmt.Printf("| walk, repeated (best of 3) | %s | %s | %s | **%.2f×** |\n", secs(tFind), secs(mFind2), secs(rWalk2), ratio(rWalk2, mFind2))
	tCat := best(func() { run("find " + tmp + "/d* -type f -exec cat {} + >/dev/null") })
	mCat := timed("find " + mnt + "/d* -type f -exec cat {} + >/dev/null")
	rCat := timed(rclone + "cat --include '/d*/**' :webdav: >/dev/null")
	fmt.Printf("| cat every small file, first pass (find -exec cat; rclone cat, one GET after another) | %s | %s | %s | **%.2f×** |\n", secs(tCat), secs(mCat), secs(rCat), ratio(rCat, mCat))
	copyDir := filepath.Join(tmp, "copy")
	rCopy := timed(rclone + "copy --transfers 16 --checkers 16 --include '/d*/**' :webdav: " + copyDir)
	must(os.RemoveAll(copyDir))
	fmt.Printf("| read every small file, 16 at once (rclone copy --transfers 16 into tmpfs) | | %s | %s | **%.2f×** |\n", secs(mCat), secs(rCopy), ratio(rCopy, mCat))
	tBig := best(func() { run("dd if=" + bigSrc + " of=/dev/null bs=1M status=none") })
	dropCache(db)
	mBig := timed("dd if=" + filepath.Join(mnt, "big", "big.bin") + " of=/dev/null bs=1M status=none")
	dropCache(db)
	rBig := timed(rclone + "cat :webdav:big/big.bin >/dev/null")
	dropCache(db)
	cBig := timed("curl -sS -o /dev/null " + dav + "big/big.bin")
	fmt.Printf("| %d MiB sequential read, cold (throughput; ratio WebDAV / mount) | %s | %s | %s (curl: %s) | **%.2f×** (curl %.2f×) |\n", bigMiB,
		rate(len(big), tBig), rate(len(big), mBig), rate(len(big), rBig), rate(len(big), cBig), ratio(mBig, rBig), ratio(mBig, cBig))
	fmt.Printf("| server RSS after the runs | | | %s | |\n", rssString(cmd.Process.Pid))
}

// smallFile is small file i of the tree: 64 to 2048 bytes in 100
// directories, as bench/mountbench makes them.
func smallFile(i int) (string, []byte) {
	r := rand.New(rand.NewPCG(uint64(i), 42))
	data := make([]byte, 64+r.IntN(2048-64+1))
	for j := range data {
		data[j] = 'a' + byte(r.IntN(26))
	}
	return fmt.Sprintf("/d%03d/f%06d.txt", i%100, i), data
}

// pushFile pushes src to the depot directory to with depotfs push.
func pushFile(bin, url, src, to string) {
	out, err := exec.Command(bin, "push", "--url", url, "--to", to, src).CombinedOutput()
	if err != nil {
		log.Fatalf("push %s: %v\n%s", src, err, out)
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

// timed runs a shell command once and returns how long it took.
func timed(cmd string) time.Duration { return benchd.Timed(func() { run(cmd) }) }

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

// rssKiB is the resident set of process pid in KiB.
func rssKiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	must(err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
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
