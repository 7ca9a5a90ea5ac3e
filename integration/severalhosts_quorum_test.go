package integration_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// healthz is the status of d's /healthz.
func (d *daemon) healthz(t testing.TB) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	res, err := c.Get(strings.TrimSuffix(d.url, "/mcp") + "/healthz")
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// TestSeveralHostsHealthzQuorum: with two of the three NATS servers gone,
// no write can commit, and /healthz on every host says so (503) within
// half the systemd watchdog interval of dist/systemd; it answers 200
// again once the servers are back.
func TestSeveralHostsHealthzQuorum(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 2)
	for _, d := range h.all {
		if code := d.healthz(t); code != http.StatusOK {
			t.Fatalf("%s: /healthz %d while healthy", d.mount, code)
		}
	}
	// Keep the tree's leader: a leader cut off from its peers still
	// answers questions about the stream.
	leader := h.treeLeader(t)
	var down []int
	for i := range h.cluster.Nodes {
		if i != leader {
			h.cluster.Kill(i)
			down = append(down, i)
		}
	}
	killed := time.Now()
	for _, d := range h.all {
		waitFor(t, 15*time.Second, "/healthz 503 on "+d.mount, func() bool { return d.healthz(t) == http.StatusServiceUnavailable })
	}
	t.Logf("/healthz failed on every host %v after two of three servers were killed", time.Since(killed).Round(time.Millisecond))
	for _, i := range down {
		h.cluster.Restart(i)
	}
	for _, d := range h.all {
		waitFor(t, 30*time.Second, "/healthz 200 on "+d.mount, func() bool { return d.healthz(t) == http.StatusOK })
	}
}

// TestSeveralHostsServeWaitsForCluster: serve started while no NATS
// server runs waits for the cluster (saying so in its log), and serves
// once the servers, started 3 s later, have elected their leaders.
func TestSeveralHostsServeWaitsForCluster(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	for i := range c.Nodes {
		c.Kill(i)
	}
	started := make(chan error, 1)
	go func() {
		time.Sleep(3 * time.Second) // the servers come up after depotfs, as at boot
		var err error
		for i := range c.Nodes {
			err = errors.Join(err, c.StartNode(i))
		}
		started <- err
	}()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", c.URL(), "--nats-prefix", "waits"},
		readyWithin: 90 * time.Second})
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(d.logs.String(), "waiting for the NATS cluster") {
		t.Errorf("serve did not log what it waited for:\n%s", d.logs)
	}
	pushBytes(d, "/after-the-wait.txt", []byte("written\n"), nil)
	waitContent(t, d.path("/after-the-wait.txt"), []byte("written\n"), 10*time.Second)
}

// cacheFiles sends n small files under dir in one guide_cache_files call
// through d and returns how long it took.
func cacheFiles(t *testing.T, d *daemon, dir string, n int) (time.Duration, envelope) {
	t.Helper()
	files := make([]any, n)
	for i := range files {
		files[i] = map[string]any{"path": fmt.Sprintf("%s/f%04d.txt", dir, i), "content": fmt.Sprintf("file %d of the batch\n", i)}
	}
	start := time.Now()
	env, err := d.tryCall("guide_cache_files", map[string]any{"files": files})
	if err != nil {
		t.Fatalf("guide_cache_files: %v", err)
	}
	return time.Since(start), env
}

// TestSeveralHostsLargeBatch: one guide_cache_files call of 1,000 small
// files (the tool's advertised maximum) commits on a NATS depot, as on
// bolt, and every file reads on the other host; a host whose
// --nats-max-batch is lower refuses a larger change with a limit error
// that names that flag.
func TestSeveralHostsLargeBatch(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 2)
	a, b := h.all[0], h.all[1]
	single := startDaemon(t, daemonConfig{transport: overHTTP})
	boltTook, env := cacheFiles(t, single, "/batch", 1000)
	if !env.Success {
		t.Fatalf("1,000 files on bolt: %+v", env.Error)
	}
	natsTook, env := cacheFiles(t, a, "/batch", 1000)
	if !env.Success {
		t.Fatalf("1,000 files on NATS: %+v", env.Error)
	}
	t.Logf("1,000-file guide_cache_files: nats %v, bolt %v (%.1fx)", natsTook.Round(time.Millisecond), boltTook.Round(time.Millisecond), float64(natsTook)/float64(boltTook))
	waitFor(t, 30*time.Second, "1,000 files on B", func() bool { return len(b.ls(t, "/batch")) == 1000 })
	waitContent(t, b.path("/batch/f0999.txt"), []byte("file 999 of the batch\n"), 10*time.Second)

	small := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", h.cluster.URL(), "--nats-prefix", h.prefix, "--nats-max-batch", "100"}})
	_, env = cacheFiles(t, small, "/over", 50)
	if env.Success || env.Error == nil || env.Error.Type != "limit" || !strings.Contains(env.Error.Message, "--nats-max-batch") {
		t.Fatalf("50 files (150 records) over --nats-max-batch 100: %+v, want a limit error naming the flag", env.Error)
	}
	if names := b.ls(t, "/over"); len(names) != 0 {
		t.Errorf("the refused batch left %v", names)
	}
}

// TestSeveralHostsSettingsAgree: the first host records its limits in the
// cluster; a host started with another --max-store-size refuses to start,
// naming both values, and starts once told to make its values the
// depot's.
func TestSeveralHostsSettingsAgree(t *testing.T) {
	t.Parallel()
	c := natstest.Start(t, 3)
	args := []string{"--store", c.URL(), "--nats-prefix", "agree", "--max-store-size", "10MiB"}
	startDaemon(t, daemonConfig{transport: overHTTP, args: args})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, depotfsBin, "serve", "--db", filepath.Join(dir, "depot.db"), "--mount", filepath.Join(dir, "mnt"),
		"--listen", "127.0.0.1:0", "--store", c.URL(), "--nats-prefix", "agree", "--max-store-size", "20MiB")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--max-store-size is 20MiB on this host, 10MiB in the depot") {
		t.Fatalf("a host with another --max-store-size: %v\n%s\nwant a refusal naming both values", err, out)
	}
	startDaemon(t, daemonConfig{transport: overHTTP, args: append(args[:4:4], "--max-store-size", "20MiB", "--nats-reset-settings")})
	startDaemon(t, daemonConfig{transport: overHTTP, args: append(args[:4:4], "--max-store-size", "20MiB")})
}

// TestSeveralHostsRawUploadNoQuorum: a small raw upload (stored inline)
// sent while two of the three NATS servers are down gets an answer within
// the store's write time limit: HTTP 503 saying the cluster has no quorum,
// with a retry hint, not an internal failure and not a handler that runs
// until the client leaves. A guide_cache_file sent meanwhile answers one
// of two things, never both: that its outcome is unknown (it reached the
// leader, which could not confirm it) and how to find out, or that it
// changed nothing (no leader took it), which must hold once the servers
// are back. The write time limit is 5 s here (--nats-write-timeout; the
// default is 30 s): the test waits it out and checks nothing meanwhile.
func TestSeveralHostsRawUploadNoQuorum(t *testing.T) {
	t.Parallel()
	const limit = 5 * time.Second
	h := startHostsArgs(t, 1, []string{"--nats-write-timeout", limit.String()})
	d := h.all[0]
	pushBytes(d, "/raw/put.txt", []byte("v1\n"), nil)
	u := beginUpload(t, d, map[string]any{"path": "/raw/small.txt"})
	leader := h.treeLeader(t)
	for i := range h.cluster.Nodes {
		if i != leader {
			h.cluster.Kill(i)
		}
	}
	unknown := make(chan envelope, 1)
	go func() {
		env, err := d.tryCall("guide_cache_file", map[string]any{"path": "/raw/put.txt", "content": "v2\n"})
		if err != nil {
			t.Errorf("guide_cache_file without quorum: %v", err)
		}
		unknown <- env
	}()
	start := time.Now()
	r := put(t, u, strings.NewReader("small raw bytes\n"), int64(len("small raw bytes\n")), "")
	took := time.Since(start)
	env := <-unknown
	t.Logf("guide_cache_file without quorum: %s %+v", env.Message, env.Error)
	nothing, unknownOutcome := strings.Contains(env.Message, "changed nothing"), strings.Contains(env.Message, "outcome is unknown")
	switch {
	case env.Success || env.Error == nil:
		t.Fatalf("guide_cache_file without quorum succeeded")
	case nothing == unknownOutcome:
		t.Errorf("a failed write's reply: %q, want it to say either that it changed nothing or that its outcome is unknown", env.Message)
	case unknownOutcome && (!strings.Contains(env.Error.Instruction, "read the path") || strings.Contains(env.Error.Instruction, "safe to repeat")):
		t.Errorf("an unconfirmed write's instruction: %+v, want how to check whether it was applied", env.Error)
	case nothing && (strings.Contains(env.Error.Instruction, "may still be applied") || !strings.Contains(env.Error.Instruction, "safe to repeat")):
		t.Errorf("a write that changed nothing: %+v, the instruction says otherwise", env.Error)
	}
	defer func() {
		if !nothing || t.Failed() {
			return
		}
		// It said it changed nothing: after the servers are back and a
		// later change committed, the file still holds v1.
		for i := range h.cluster.Nodes {
			if i != leader {
				h.cluster.Restart(i)
			}
		}
		waitFor(t, 60*time.Second, "a write after the servers are back", func() bool {
			env, err := d.tryCall("guide_cache_file", map[string]any{"path": "/raw/after.txt", "content": "after\n"})
			return err == nil && env.Success
		})
		if got, err := os.ReadFile(d.path("/raw/put.txt")); err != nil || string(got) != "v1\n" {
			t.Errorf("the write that changed nothing: the file holds %q (%v), want v1", got, err)
		}
	}()
	t.Logf("raw PUT with two of three servers down: %d after %v: %+v", r.Status, took.Round(time.Millisecond), r.Env.Error)
	if r.Status != http.StatusServiceUnavailable || r.Env.Error == nil || !strings.Contains(r.Env.Error.Message, "no quorum") {
		t.Errorf("raw PUT without quorum: %d %+v, want 503 saying the cluster has no quorum", r.Status, r.Env.Error)
	}
	if took > limit+15*time.Second {
		t.Errorf("the answer took %v, more than the write time limit %v allows", took, limit)
	}
}

// listed reports whether dir's listing has name.
func listed(dir, name string) bool {
	des, _ := os.ReadDir(dir)
	return slices.ContainsFunc(des, func(de os.DirEntry) bool { return de.Name() == name })
}

// TestSeveralHostsCloseToOpen: a program on host B that opens a file
// after host A acknowledged a write to it reads that write. A third of
// the writes overwrite files B read a moment before (its mount still
// holds their older version), a third create files whose names B had
// just looked up and found missing, a third create files in directories
// B had found missing; B lists the parent before and after these, and the
// new name must be listed. No read may be stale or missing. 60 writes, 20
// of each kind, or 10,000 with DEPOTFS_SOAK=1 (the figure of
// docs/several-hosts.md).
func TestSeveralHostsCloseToOpen(t *testing.T) {
	t.Parallel()
	h := startHosts(t, 2)
	a, b := h.all[0], h.all[1]
	n := bySoak(60, 10000)
	var bad []string
	for i := range n {
		p := fmt.Sprintf("/c2o/f%d.txt", i%4)
		switch i % 3 {
		case 1:
			p = fmt.Sprintf("/c2o/new%03d.txt", i)
		case 2:
			p = fmt.Sprintf("/c2o/d%03d/f.txt", i)
		}
		if i%3 != 0 {
			if _, err := os.Stat(b.path(p)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("stat %s on B before A wrote it: %v, want not found", p, err)
			}
			os.ReadDir(b.path("/c2o")) // the kernel caches the listing
		}
		want := fmt.Sprintf("write %d\n", i)
		pushBytes(a, p, []byte(want), nil)
		if got, err := os.ReadFile(b.path(p)); err != nil || string(got) != want {
			bad = append(bad, fmt.Sprintf("%s: %q, %v", p, got, err))
		}
		if name := strings.Split(p, "/")[2]; i%3 != 0 && !listed(b.path("/c2o"), name) {
			bad = append(bad, fmt.Sprintf("%s: not in the listing of /c2o", name))
		}
	}
	t.Logf("%d writes on A, each read through B's mount right after the acknowledgement: %d stale or missing", n, len(bad))
	if len(bad) > 0 {
		t.Errorf("reads on B after A acknowledged, want %q:\n%s", "write N", strings.Join(bad, "\n"))
	}
}
