package integration_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// transportKind names how a test reaches the daemon.
type transportKind string

const (
	overHTTP  transportKind = "http"
	overStdio transportKind = "stdio"
)

// daemon is one running depotfs process with its database, mount and client.
type daemon struct {
	t      testing.TB
	db     string
	mount  string
	url    string // MCP endpoint, for HTTP daemons
	cmd    *exec.Cmd
	client *client.Client
	logs   *lockedBuffer
	exited chan struct{} // closed when cmd has been waited for
	reaps  bool          // this harness waits for cmd (reap); over stdio the MCP client does
	cfg    daemonConfig  // how it was started, for restart
}

// daemonConfig chooses how to start a daemon. A zero db or mount picks a
// fresh one under t.TempDir().
type daemonConfig struct {
	transport transportKind
	db, mount string
	args      []string
	// pki, for HTTP, serves HTTPS with the PKI's server certificate and,
	// unless pki.noClientCA, its client CA and CRL (mTLS).
	pki *pki
	// client is how the daemon's own client authenticates over HTTP: a
	// client certificate and/or a bearer token (see pki_test.go).
	client clientAuth
	// noInit leaves the client unconnected, for tests whose client must be
	// refused; the daemon is still waited for.
	noInit bool
	// env is added to the daemon's environment (NAME=value).
	env []string
	// readyWithin is how long the daemon may take to print its ready
	// line; 0 means 30 s. One that waits for its NATS servers to start
	// also waits for their elections (4 to 14 s each under load).
	readyWithin time.Duration
	// race runs a daemon built with the race detector even when the
	// others are not (see raceDaemon), for the tests that drive the
	// daemon's own concurrency end to end.
	race bool
}

// startDaemon starts depotfs and returns once its MCP client is initialized
// and its mount is up. Everything it starts is stopped in t.Cleanup.
func startDaemon(t testing.TB, cfg daemonConfig) *daemon {
	t.Helper()
	dir := t.TempDir()
	if cfg.db == "" {
		cfg.db = filepath.Join(dir, "depot.db")
	}
	if cfg.mount == "" {
		cfg.mount = filepath.Join(dir, "mnt")
	}
	d := &daemon{t: t, db: cfg.db, mount: cfg.mount, logs: &lockedBuffer{}, exited: make(chan struct{}), cfg: cfg}
	args := append([]string{"serve", "--db", cfg.db, "--mount", cfg.mount, "--log-level", "debug"}, cfg.args...)
	t.Cleanup(d.stop)
	bin := depotfsBin
	if cfg.race && !raceDaemon {
		b, err := raceBin()
		if err != nil {
			t.Fatal(err)
		}
		bin = b
	}

	switch cfg.transport {
	case overHTTP:
		args = append(args, cfg.pki.serveArgs()...)
		d.cmd = exec.Command(bin, append(args, "--listen", "127.0.0.1:0")...)
		d.cmd.Stderr = d.logs
		d.cmd.Env = append(os.Environ(), cfg.env...)
		if err := d.cmd.Start(); err != nil {
			t.Fatalf("start depotfs: %v", err)
		}
		d.reaps = true
		go d.reap()
		d.url = d.waitForEndpoint()
		if cfg.noInit {
			waitFor(t, 10*time.Second, "mount to appear", func() bool { return isMounted(d.mount) })
			return d
		}
		d.client = d.newClient(cfg.client).mcp
	case overStdio:
		started := make(chan *exec.Cmd, 1)
		c, err := client.NewStdioMCPClientWithOptions(bin, nil, append(args, "--stdio"),
			transport.WithCommandStderrWriter(d.logs),
			transport.WithCommandFunc(func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
				cmd := exec.CommandContext(ctx, command, args...)
				cmd.Env = append(append(os.Environ(), env...), cfg.env...)
				started <- cmd
				return cmd, nil
			}))
		if err != nil {
			t.Fatalf("start depotfs over stdio: %v", err)
		}
		d.cmd = <-started // the stdio transport owns Wait; it runs in client.Close
		d.client = c
	default:
		t.Fatalf("unknown transport %q", cfg.transport)
	}

	if err := initialize(d.client); err != nil {
		t.Fatalf("initialize: %v\ndaemon log:\n%s", err, d.logs)
	}
	waitFor(t, 10*time.Second, "mount to appear", func() bool { return isMounted(d.mount) })
	return d
}

// initialize starts an MCP session on c.
func initialize(c *client.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "depotfs-integration", Version: "1"}
	_, err := c.Initialize(ctx, init)
	return err
}

var endpointRE = regexp.MustCompile(`mcp=(https?://\S+/mcp)`)

// waitForEndpoint polls the daemon's log for its ready line and returns the
// MCP URL it printed.
func (d *daemon) waitForEndpoint() string {
	d.t.Helper()
	var url string
	waitFor(d.t, cmp.Or(d.cfg.readyWithin, 30*time.Second), "depotfs ready line", func() bool {
		select {
		case <-d.exited:
			d.t.Fatalf("depotfs exited before it was ready:\n%s", d.logs)
		default:
		}
		if m := endpointRE.FindStringSubmatch(d.logs.String()); m != nil {
			url = m[1]
			return true
		}
		return false
	})
	return url
}

func (d *daemon) reap() {
	_ = d.cmd.Wait()
	close(d.exited)
}

// stop closes the client, asks the daemon to stop with SIGTERM, kills it if
// it does not exit in time, detaches a mount it left behind, and fails the
// test if a race-built daemon reported a data race.
func (d *daemon) stop() {
	defer d.checkRaces()
	if d.client != nil {
		_ = d.client.Close()
	}
	if d.cmd != nil && d.cmd.Process != nil {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		if !d.waitExit(20 * time.Second) {
			d.t.Errorf("depotfs did not exit 20s after SIGTERM; killing it")
			_ = d.cmd.Process.Kill()
			d.waitExit(5 * time.Second)
		}
	}
	if isMounted(d.mount) {
		d.t.Errorf("depotfs left %s mounted; detaching it", d.mount)
		_ = syscall.Unmount(d.mount, syscall.MNT_DETACH)
	}
}

// checkRaces fails the test with the race detector's report when the
// daemon's log holds one: a race-built daemon prints it and carries on,
// and exits with status 66 only when it exits on its own.
func (d *daemon) checkRaces() {
	const mark = "WARNING: DATA RACE"
	logs := d.logs.String()
	if i := strings.Index(logs, mark); i >= 0 {
		report, _, _ := strings.Cut(logs[i:], "\n==================\n")
		d.t.Errorf("the daemon reported a data race:\n%s", report)
	}
}

// waitExit reports whether the process has exited within timeout and,
// when the harness reaps it, been waited for: only then is
// cmd.ProcessState set. (The process counts as done a moment before
// cmd.Wait sets ProcessState; reading it then gave a nil state, exit code
// -1.) A daemon over stdio is waited for by its MCP client.
func (d *daemon) waitExit(timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return true
		default:
		}
		if !d.reaps {
			if err := d.cmd.Process.Signal(syscall.Signal(0)); errors.Is(err, os.ErrProcessDone) {
				return true
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// restart stops the daemon with SIGTERM, as an operator would, and starts
// a new one with the same configuration, database and mount.
func (d *daemon) restart() *daemon {
	d.t.Helper()
	d.stop()
	d.client, d.cmd = nil, nil
	return startDaemon(d.t, d.cfg)
}

// kill stops the daemon with SIGKILL, as a crash would, and waits for it.
func (d *daemon) kill() {
	d.t.Helper()
	_ = d.cmd.Process.Kill()
	_ = d.client.Close()
	d.client = nil
	if !d.waitExit(10 * time.Second) {
		d.t.Fatalf("depotfs survived SIGKILL")
	}
	d.cmd = nil
}

// path returns the host path of a depot path inside the mount.
func (d *daemon) path(depotPath string) string {
	return filepath.Join(d.mount, filepath.FromSlash(depotPath))
}

// envelope is the reply every depotfs tool sends.
type envelope struct {
	Success  bool           `json:"success"`
	Data     map[string]any `json:"data"`
	Message  string         `json:"message"`
	Warnings []string       `json:"warnings"`
	Stats    map[string]any `json:"stats"`
	Error    *struct {
		Type        string `json:"type"`
		Message     string `json:"message"`
		Instruction string `json:"instruction"`
		RetryAfter  int    `json:"retry_after"`
		// Current is the entry a conditional write lost to.
		Current *struct {
			Exists   bool   `json:"exists"`
			Revision uint64 `json:"revision"`
			SHA256   string `json:"sha256"`
		} `json:"current"`
	} `json:"error"`
}

// call invokes a tool and decodes its envelope, failing the test on a
// protocol error or a malformed reply.
func (d *daemon) call(tool string, args map[string]any) envelope {
	d.t.Helper()
	env, err := d.tryCall(tool, args)
	if err != nil {
		d.t.Fatalf("%v\ndaemon log tail:\n%s", err, tail(d.logs.String(), 40))
	}
	return env
}

// tryCall invokes a tool and decodes its envelope, checking that the
// structured content, the text copy and isError agree. It is safe to call
// from any goroutine.
func (d *daemon) tryCall(tool string, args map[string]any) (envelope, error) {
	return callWith(d.client, tool, args)
}

// callWith invokes a tool through c and decodes its envelope, with the
// checks of tryCall.
func callWith(c *client.Client, tool string, args map[string]any) (envelope, error) {
	// A guard against a hung call, not a bound the tests assert: at load 20
	// the race-built client alone took over a minute to send a 4 MiB chunk.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return envelope{}, fmt.Errorf("%s: protocol error: %w", tool, err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return envelope{}, fmt.Errorf("%s: structured content: %w", tool, err)
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return envelope{}, fmt.Errorf("%s: envelope %s: %w", tool, raw, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			text += tc.Text
		}
	}
	var textEnv envelope
	if err := json.Unmarshal([]byte(text), &textEnv); err != nil || textEnv.Success != env.Success {
		return envelope{}, fmt.Errorf("%s: text copy %q does not match structured content %s", tool, text, raw)
	}
	if res.IsError == env.Success {
		return envelope{}, fmt.Errorf("%s: isError=%v but success=%v", tool, res.IsError, env.Success)
	}
	return env, nil
}

// mustCall invokes a tool that must succeed.
func (d *daemon) mustCall(tool string, args map[string]any) envelope {
	d.t.Helper()
	env := d.call(tool, args)
	if !env.Success {
		d.t.Fatalf("%s(%s) failed: %+v", tool, summarize(args), env.Error)
	}
	return env
}

func summarize(args map[string]any) string {
	var parts []string
	for k, v := range args {
		s := fmt.Sprint(v)
		if len(s) > 60 {
			s = s[:60] + "…"
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

// isMounted reports whether dir is a mount point in /proc/mounts.
func isMounted(dir string) bool {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 1 && f[1] == dir {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// lockedBuffer is a bytes.Buffer safe for a writer and readers in other
// goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
