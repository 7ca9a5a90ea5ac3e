// Package natstest runs real NATS servers with JetStream for tests: a
// cluster of nats-server processes configured exactly as
// docs/several-hosts.md tells operators to (sync_interval: always), each
// with its own store directory (on tmpfs where there is one, see
// storeRoot) and random ports. A node is a process of its own, so that a
// test can kill it with SIGKILL like any crashed server and its servers
// do not compete with the test for the Go scheduler: the
// program natstest/node, built without the race detector once per test
// process, or, if that build fails, the test binary itself started again
// in node mode (see Main). It is for tests only.
package natstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// envNode names the configuration file a node process runs.
const envNode = "DEPOTFS_NATSTEST_NODE"

// nodeStartLimit bounds how long a node may take to listen, and a
// cluster's nodes to answer JetStream requests. A node is the race-built
// test binary, and a restarted one recovers its JetStream state before it
// listens: with eight integration tests and another package's tests on two
// cores, a restart took over 20 s (the limit before), which failed the
// test with the node, not depotfs, at fault. A start that succeeds waits
// no longer for the higher limit.
const nodeStartLimit = 60 * time.Second

// Main runs a node and exits when the process is started as one by a
// Cluster; otherwise it returns at once. Call it first in TestMain of
// every package that starts a Cluster.
func Main() {
	file := os.Getenv(envNode)
	if file == "" {
		return
	}
	opts, err := server.ProcessConfigFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest node:", err)
		os.Exit(2)
	}
	opts.NoSigs, opts.NoLog = true, os.Getenv("DEPOTFS_NATSTEST_LOG") == ""
	srv, err := server.NewServer(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natstest node:", err)
		os.Exit(2)
	}
	srv.ConfigureLogger()
	srv.Start()
	if !srv.ReadyForConnections(nodeStartLimit) {
		fmt.Fprintln(os.Stderr, "natstest node: not ready")
		os.Exit(2)
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	// The test holds the other end of stdin: when it exits, however it
	// exits, the node does too.
	orphaned := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(orphaned)
	}()
	select {
	case <-sig:
	case <-orphaned:
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	os.Exit(0)
}

// nodeProgram is the program a node runs: natstest/node built without the
// race detector (a race-instrumented nats-server cost the race tests'
// clusters several times the CPU, and is not what operators run), or the
// test binary when go cannot build it here. The build is made once per
// process, into the user's cache directory, replaced atomically so that
// test processes running at once each find a whole program.
var nodeProgram = sync.OnceValue(func() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return os.Args[0]
	}
	dir = filepath.Join(dir, "depotfs-natstest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return os.Args[0]
	}
	f, err := os.CreateTemp(dir, "node-*")
	if err != nil {
		return os.Args[0]
	}
	f.Close()
	build := exec.Command("go", "build", "-o", f.Name(), "github.com/depotfs/depotfs/store/nats/natstest/node")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "natstest: building the node program (the test binary serves instead): %v\n%s", err, out)
		os.Remove(f.Name())
		return os.Args[0]
	}
	bin := filepath.Join(dir, "node")
	if err := os.Rename(f.Name(), bin); err != nil {
		os.Remove(f.Name())
		return os.Args[0]
	}
	return bin
})

// Node is one server of a Cluster: its name, ports and store directory
// stay the same across restarts.
type Node struct {
	Name        string
	Port        int
	ClusterPort int
	HTTPPort    int // the monitoring port
	Dir         string
	cmd         *exec.Cmd
	exited      chan struct{}
}

// URL is the node's client URL.
func (n *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.Port) }

// Cluster is a set of servers forming one JetStream cluster. Its methods
// must be called from the test's goroutine.
type Cluster struct {
	t     testing.TB // nil for a cluster from Launch
	dir   string     // the store directories' parent, removed by Stop
	Nodes []*Node
}

// Config returns the configuration file text of node n in a cluster whose
// route ports are routes. It is the configuration docs/several-hosts.md
// shows.
func Config(n *Node, routes []int) string {
	var rs []string
	for _, p := range routes {
		rs = append(rs, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
	}
	return fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
# the monitoring port: readiness checks
http: 127.0.0.1:%d
jetstream {
  store_dir: %q
  # fsync every write before acknowledging it
  sync_interval: always
  # one depot change is one atomic batch (--nats-max-batch)
  limits { batch { max_msgs: 10000 } }
}
cluster {
  name: depot
  listen: 127.0.0.1:%d
  routes: [%s]
}
`, n.Name, n.Port, n.HTTPPort, n.Dir, n.ClusterPort, strings.Join(rs, ", "))
}

// freePort returns a TCP port nothing listens on right now, below the
// kernel's ephemeral range. A node keeps its ports across Restart, and a
// port from the ephemeral range (what listening on port 0 gives) may by
// then be the local end of some outgoing connection: a restarted node
// then cannot listen ("natstest node: not ready"), as happened once under
// CI with the depot hosts' many connections to the other nodes.
func freePort() (int, error) {
	low := ephemeralLow()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("picking a free port: none free among 200 tries below %d", low)
}

// ephemeralLow returns the first port of the kernel's ephemeral range,
// or Linux's default when it cannot be read.
func ephemeralLow() int {
	const linuxDefault = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil || low <= 11000 {
		return linuxDefault
	}
	return low
}

// Start starts an n-node cluster and waits until JetStream has a leader;
// t.Cleanup shuts it down.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c, err := Launch(n)
	if err != nil {
		t.Fatal(err)
	}
	c.t = t
	t.Cleanup(c.Stop)
	return c
}

// Launch starts an n-node cluster for a whole test process, in a new
// directory under storeRoot, and waits until JetStream answers on every
// node; Stop shuts it down and removes the directory. It is for tests
// that share one cluster, each on depots of its own, and neither stop nor
// pause its nodes: Restart and WaitReady need a cluster from Start.
func Launch(n int) (*Cluster, error) {
	dir, err := os.MkdirTemp(storeRoot(), "natstest-")
	if err != nil {
		return nil, err
	}
	c, err := launch(dir, n)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.dir = dir
	return c, nil
}

// launch starts an n-node cluster with its store directories in dir.
func launch(dir string, n int) (*Cluster, error) {
	c := &Cluster{}
	// A port picked free may be taken before the server binds it: then
	// the whole cluster starts again on new ports.
	for attempt := 1; ; attempt++ {
		c.Nodes = nil
		for i := range n {
			nd := &Node{Name: fmt.Sprintf("n%d", i+1), Dir: filepath.Join(dir, fmt.Sprintf("n%d", i+1))}
			for _, p := range []*int{&nd.Port, &nd.ClusterPort, &nd.HTTPPort} {
				var err error
				if *p, err = freePort(); err != nil {
					return nil, err
				}
			}
			c.Nodes = append(c.Nodes, nd)
		}
		var err error
		for i := range c.Nodes {
			if err = c.start(i); err != nil {
				break
			}
		}
		if err == nil {
			break
		}
		c.Stop()
		if attempt == 3 {
			return nil, err
		}
	}
	if err := c.waitReady(); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// Stop kills every node and removes the cluster's directory.
func (c *Cluster) Stop() {
	for i := range c.Nodes {
		c.Kill(i)
	}
	os.RemoveAll(c.dir)
}

// storeRoot is the directory the clusters' store directories go in:
// $DEPOTFS_NATSTEST_DIR if set, else /dev/shm where it is a writable
// directory with 1 GiB free, else the system's temporary directory. The servers fsync
// every write (sync_interval: always), which on a loaded disk costs
// milliseconds each and, in R3 streams, on two servers per write; on
// tmpfs it costs nothing, and a SIGKILLed server loses no more there than
// on a disk: what it wrote is in the kernel's page cache either way.
func storeRoot() string {
	if dir := os.Getenv("DEPOTFS_NATSTEST_DIR"); dir != "" {
		return dir
	}
	// A container's /dev/shm is often 64 MiB, too small for the clusters
	// of a package's tests.
	var st syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &st); err != nil || uint64(st.Bavail)*uint64(st.Bsize) < 1<<30 {
		return os.TempDir()
	}
	if f, err := os.CreateTemp("/dev/shm", "natstest-probe-"); err == nil {
		f.Close()
		os.Remove(f.Name())
		return "/dev/shm"
	}
	return os.TempDir()
}

// Routes returns the cluster ports of every node.
func (c *Cluster) Routes() []int {
	var rs []int
	for _, nd := range c.Nodes {
		rs = append(rs, nd.ClusterPort)
	}
	return rs
}

func (c *Cluster) start(i int) error {
	nd := c.Nodes[i]
	file := filepath.Join(filepath.Dir(nd.Dir), nd.Name+".conf")
	if err := os.WriteFile(file, []byte(Config(nd, c.Routes())), 0o600); err != nil {
		return err
	}
	if _, err := server.ProcessConfigFile(file); err != nil {
		return fmt.Errorf("node %s config: %w", nd.Name, err)
	}
	cmd := exec.Command(nodeProgram(), "-test.run=^$")
	cmd.Env = append(os.Environ(), envNode+"="+file)
	cmd.Stderr = os.Stderr
	if _, err := cmd.StdinPipe(); err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("node %s: %w", nd.Name, err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		for sc.Scan() {
		}
	}()
	nd.cmd, nd.exited = cmd, make(chan struct{})
	go func() {
		cmd.Wait()
		close(nd.exited)
	}()
	select {
	case ok := <-ready:
		if !ok {
			return fmt.Errorf("node %s did not start", nd.Name)
		}
	case <-time.After(nodeStartLimit + 5*time.Second):
		return fmt.Errorf("node %s did not start within %v", nd.Name, nodeStartLimit+5*time.Second)
	}
	return nil
}

// WaitReady waits until JetStream answers on every running node.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	if err := c.waitReady(); err != nil {
		c.t.Fatal(err)
	}
}

func (c *Cluster) waitReady() error {
	deadline := time.Now().Add(nodeStartLimit)
	for _, nd := range c.Nodes {
		if nd.cmd == nil {
			continue
		}
		for !jsReady(nd.URL()) {
			if time.Now().After(deadline) {
				return fmt.Errorf("JetStream on %s not ready within %v", nd.Name, nodeStartLimit)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// jsReady reports whether JetStream at url answers an account request.
func jsReady(url string) bool {
	nc, err := nats.Connect(url, nats.Timeout(time.Second))
	if err != nil {
		return false
	}
	defer nc.Close()
	m, err := nc.Request("$JS.API.INFO", nil, time.Second)
	return err == nil && !strings.Contains(string(m.Data), `"error"`)
}

// MetaLeader returns the index of the node that leads the cluster's
// JetStream meta layer (which creates and places streams and consumers),
// as the running nodes' monitoring ports report it; -1 when none does.
func (c *Cluster) MetaLeader() int {
	hc := http.Client{Timeout: time.Second}
	for _, nd := range c.Nodes {
		if nd.cmd == nil {
			continue
		}
		res, err := hc.Get(fmt.Sprintf("http://127.0.0.1:%d/jsz", nd.HTTPPort))
		if err != nil {
			continue
		}
		var jsz struct {
			Meta *struct {
				Leader string `json:"leader"`
			} `json:"meta_cluster"`
		}
		err = json.NewDecoder(res.Body).Decode(&jsz)
		res.Body.Close()
		if err != nil || jsz.Meta == nil {
			continue
		}
		for i, n := range c.Nodes {
			if n.Name == jsz.Meta.Leader {
				return i
			}
		}
	}
	return -1
}

// URL is the comma-separated client URLs of every node.
func (c *Cluster) URL() string {
	var us []string
	for _, nd := range c.Nodes {
		us = append(us, nd.URL())
	}
	return strings.Join(us, ",")
}

// Kill ends node i with SIGKILL, as a crash would, and waits until it
// has exited.
func (c *Cluster) Kill(i int) {
	nd := c.Nodes[i]
	if nd.cmd == nil {
		return
	}
	nd.cmd.Process.Kill()
	<-nd.exited
	nd.cmd = nil
}

// Pause stops node i with SIGSTOP, as a server hung or swapped out would
// be: it keeps its connections but answers nothing until Resume.
func (c *Cluster) Pause(i int) {
	if nd := c.Nodes[i]; nd.cmd != nil {
		nd.cmd.Process.Signal(syscall.SIGSTOP)
	}
}

// Resume continues node i after Pause.
func (c *Cluster) Resume(i int) {
	if nd := c.Nodes[i]; nd.cmd != nil {
		nd.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// Running reports whether node i is running (not killed; a paused node
// is running).
func (c *Cluster) Running(i int) bool { return c.Nodes[i].cmd != nil }

// StartNode starts node i again on its store directory and returns once
// it runs, without waiting for JetStream. Unlike Restart it may be called
// from any goroutine.
func (c *Cluster) StartNode(i int) error { return c.start(i) }

// Restart starts node i again on its store directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.start(i); err != nil {
		c.t.Fatal(err)
	}
	c.WaitReady()
}

// Connect returns a connection to the cluster, closed by t.Cleanup.
func (c *Cluster) Connect(t testing.TB) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
