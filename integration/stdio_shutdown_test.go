package integration_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// TestStdioRefusesAfterSIGTERM: over --stdio, the requests a client sends
// after SIGTERM, while depotfs waits for a file open in its mount, are
// answered with the JSON-RPC error "depotfs is shutting down" (the same
// as HTTP's; the real client matches it to its request by the echoed id),
// where they used to go unanswered until the process exited. Closing the
// file then lets depotfs exit 0 at once.
func TestStdioRefusesAfterSIGTERM(t *testing.T) {
	t.Parallel()
	// Race-built: a drain with requests arriving during it, the daemon's
	// shutdown concurrency end to end, and its exit status shows a race.
	// (TestSIGTERMDrains drives the same code with a 32 MiB upload, which
	// a race-built daemon took minutes over on a loaded machine.)
	d := startDaemon(t, daemonConfig{transport: overStdio, race: true, args: []string{"--shutdown-timeout", "60s"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/held.txt", "content": "held"})
	f, err := os.Open(d.path("/held.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// From this line on depotfs no longer hands requests to mcp-go.
	waitFor(t, 10*time.Second, "depotfs to wait for the file open in its mount", func() bool {
		return strings.Contains(d.logs.String(), "waiting for files open in the mount")
	})

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	call := mcp.CallToolRequest{}
	call.Params.Name = "guide_cache_stats"
	call.Params.Arguments = map[string]any{}
	_, callErr := d.client.CallTool(ctx, call)
	_, listErr := d.client.ListTools(ctx, mcp.ListToolsRequest{})
	for what, err := range map[string]error{"tools/call": callErr, "tools/list": listErr} {
		if err == nil || !strings.Contains(err.Error(), "depotfs is shutting down") {
			t.Errorf("%s after SIGTERM over stdio: %v; want the error saying depotfs is shutting down", what, err)
		}
	}

	// The open file was all that held depotfs up.
	f.Close()
	closed := time.Now()
	pid := d.cmd.Process.Pid
	waitFor(t, 10*time.Second, "depotfs to exit once the file was closed", func() bool { return exited(pid) })
	t.Logf("depotfs exited %v after the file was closed", time.Since(closed).Round(time.Millisecond))
	if err := d.client.Close(); err != nil { // waits for the process: its exit status
		t.Errorf("depotfs over stdio after SIGTERM: %v; want exit status 0\n%s", err, tail(d.logs.String(), 20))
	}
	d.client = nil
	if logs := d.logs.String(); !strings.Contains(logs, "unmounted") || strings.Contains(logs, "unmounting with files still open") {
		t.Errorf("depotfs did not unmount cleanly once the file was closed:\n%s", tail(logs, 20))
	}
}

// exited reports whether process pid has exited: it is gone, or a zombie
// waiting for its parent (here the stdio transport, which waits in Close).
func exited(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	// The state follows the command name, which is in parentheses.
	i := strings.LastIndexByte(string(stat), ')')
	return err == nil && i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
