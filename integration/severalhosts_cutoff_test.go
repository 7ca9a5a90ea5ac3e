package integration_test

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSeveralHostsCutOffOpen: host B reaches the NATS cluster through one
// server, which stops answering (SIGSTOP) after host A and B both read a
// file; A then overwrites it and creates another. Through B's mount, the
// open of the file and the lookup of the new name fail with EIO once B's
// write time limit passes (--nats-write-timeout, 5 s here rather than the
// default 30 s; waiting it out is all the test does meanwhile), with a
// log line saying why: never the old bytes, never "no such file"
// (before, the open read B's copy after 500 ms). Once the server answers
// again, B's mount shows A's writes.
func TestSeveralHostsCutOffOpen(t *testing.T) {
	t.Parallel()
	h := startHostsB(t, 0)
	n := h.cluster.Nodes
	a := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", n[0].URL() + "," + n[1].URL(), "--nats-prefix", h.prefix}})
	const limit = 5 * time.Second
	b := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--store", n[2].URL(), "--nats-prefix", h.prefix,
		"--nats-write-timeout", limit.String()}})
	pushBytes(a, "/cut/f.txt", []byte("old\n"), nil)
	waitContent(t, b.path("/cut/f.txt"), []byte("old\n"), 10*time.Second)

	h.cluster.Pause(2)
	paused := true
	t.Cleanup(func() {
		if paused {
			h.cluster.Resume(2)
		}
	})
	pushBytes(a, "/cut/f.txt", []byte("new\n"), nil)
	pushBytes(a, "/cut/g.txt", []byte("created\n"), nil)
	// The lookup waits out the write time limit beside the open, not
	// after it: the two waits are independent, and one is enough.
	lookup := make(chan error, 1)
	go func() {
		_, err := os.Stat(b.path("/cut/g.txt"))
		lookup <- err
	}()
	start := time.Now()
	got, err := os.ReadFile(b.path("/cut/f.txt"))
	took := time.Since(start)
	t.Logf("open through B cut off from the cluster: %q, %v after %v", got, err, took.Round(time.Millisecond))
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("read through B's mount after A's acknowledgement, B cut off: %q, %v; want EIO, never the old bytes", got, err)
	}
	if took < limit || took > 2*limit {
		t.Errorf("the open through B failed after %v, want B's write time limit %v: once, not once per walker of the path", took, limit)
	}
	if err := <-lookup; !errors.Is(err, syscall.EIO) {
		t.Errorf("lookup through B's mount of a name A created, B cut off: %v, want EIO, not that it does not exist", err)
	}
	// The daemon's stderr reaches b.logs through a pipe, after the error
	// reached the mount: poll for the line rather than read it once.
	b.waitLogLine("B's log saying why its open failed", "could not catch up with the cluster")

	h.cluster.Resume(2)
	paused = false
	waitContent(t, b.path("/cut/f.txt"), []byte("new\n"), 30*time.Second)
	waitContent(t, b.path("/cut/g.txt"), []byte("created\n"), 10*time.Second)
}
