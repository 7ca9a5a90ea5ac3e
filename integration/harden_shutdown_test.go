package integration_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMDrains: SIGTERM refuses new work at once
// and lets the work under way finish, all within one --shutdown-timeout.
// A file open in the mount when the signal arrives is read to its end and
// a raw upload whose body is half sent completes; a new open fails with
// ESHUTDOWN, a new MCP call gets a JSON-RPC error (HTTP 503) saying
// depotfs is shutting down and /healthz answers 503; with the file still open, depotfs exits by the timeout
// plus a small margin (it waits once, not once per part).
func TestSIGTERMDrains(t *testing.T) {
	t.Parallel()
	// The work under way (the rest of a 32 MiB body, a read) must finish
	// within the timeout on a loaded machine: 3 s failed at load 20. A
	// second wait would still overrun the margin.
	const timeout = 10 * time.Second
	const margin = 4 * time.Second // unmount, closing the store and the audit log, a loaded machine
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--shutdown-timeout", timeout.String()}})
	// Read 1 MiB before the signal and the rest after it: 2 MiB, pushed in
	// two calls, is enough.
	data := pseudoRandom(2<<20, 11)
	pushChunked(d, "/big.bin", data, 1<<20, "u-big", -1)
	d.mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": "x"})

	f, err := os.Open(d.path("/big.bin"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 1<<20)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}

	// A raw upload whose body is mostly sent: 24 of 32 MiB written cannot
	// all sit in loopback socket buffers, so the server is reading it.
	upload := pseudoRandom(32<<20, 12)
	sum := sha256.Sum256(upload)
	u := beginUpload(t, d, map[string]any{"path": "/late.bin", "size": len(upload), "sha256": hex.EncodeToString(sum[:])})
	pr, pw := io.Pipe()
	type putResult struct {
		status int
		body   []byte
		err    error
	}
	putDone := make(chan putResult, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPut, u, pr)
		if err != nil {
			putDone <- putResult{err: err}
			return
		}
		req.ContentLength = int64(len(upload))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			putDone <- putResult{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		putDone <- putResult{status: resp.StatusCode, body: body, err: err}
	}()
	defer pw.Close()
	if _, err := pw.Write(upload[:24<<20]); err != nil {
		t.Fatalf("sending the upload's body: %v", err)
	}

	signalled := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	// New opens are refused with ESHUTDOWN once the signal is handled.
	var openErr error
	waitFor(t, 5*time.Second, "an open in the mount to be refused", func() bool {
		g, err := os.Open(d.path("/small.txt"))
		if err == nil {
			g.Close()
			return false
		}
		openErr = err
		return true
	})
	if !errors.Is(openErr, syscall.ESHUTDOWN) {
		t.Fatalf("an open after SIGTERM failed with %v; want ESHUTDOWN", openErr)
	}
	// New MCP calls get a clear error.
	_, callErr := d.tryCall("guide_cache_stats", map[string]any{})
	if callErr == nil || !strings.Contains(callErr.Error(), "depotfs is shutting down") {
		t.Fatalf("an MCP call after SIGTERM: %v; want an error saying depotfs is shutting down", callErr)
	}

	// /healthz tells a load balancer at once.
	resp, err := http.Get(strings.TrimSuffix(d.url, "/mcp") + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after SIGTERM: %v", err)
	}
	health, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(health), "shutting down") {
		t.Errorf("/healthz after SIGTERM: %d %q; want 503 saying shutting down", resp.StatusCode, health)
	}

	// The work under way finishes: the upload's body ...
	if _, err := pw.Write(upload[24<<20:]); err != nil {
		t.Fatalf("sending the rest of the upload after SIGTERM: %v", err)
	}
	pw.Close()
	res := <-putDone
	if res.err != nil {
		t.Fatalf("the upload in flight across SIGTERM: %v", res.err)
	}
	var env envelope
	if err := json.Unmarshal(res.body, &env); err != nil || res.status != http.StatusOK || !env.Success {
		t.Fatalf("the upload in flight across SIGTERM: %d %s", res.status, res.body)
	}
	// ... and the file open in the mount.
	rest, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading on after SIGTERM: %v", err)
	}
	if !bytes.Equal(append(head, rest...), data) {
		t.Fatal("the file read across SIGTERM differs from what was pushed")
	}

	// The file stays open: depotfs stops anyway, once, at the timeout.
	exitBy := signalled.Add(timeout + margin)
	if !d.waitExit(time.Until(exitBy)) {
		t.Fatalf("depotfs still running %v after SIGTERM with --shutdown-timeout %v\n%s", time.Since(signalled), timeout, tail(d.logs.String(), 20))
	}
	t.Logf("depotfs exited %v after SIGTERM (--shutdown-timeout %v, a file still open)", time.Since(signalled).Round(10*time.Millisecond), timeout)
	if !strings.Contains(d.logs.String(), "unmounting with files still open") {
		t.Errorf("depotfs did not wait for the open file:\n%s", tail(d.logs.String(), 20))
	}
}
