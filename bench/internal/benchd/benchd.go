// Package benchd is what the benchmark programs under bench/ share: a
// depotfs server started for a run, MCP sessions on it, a stopwatch and
// quantiles. Each stops the program on failure: benchmarks have nothing to
// fall back to.
package benchd

import (
	"bufio"
	"context"
	"io"
	"log"
	"os/exec"
	"regexp"
	"slices"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

var endpointRE = regexp.MustCompile(`mcp=(https?://\S+/mcp)`)

// Serve starts `bin serve` with args on a free local port, without a call
// rate limit (a benchmark's client is the load), and returns the process
// and its MCP endpoint once its ready line says where that is.
func Serve(bin string, args ...string) (*exec.Cmd, string) {
	cmd := exec.Command(bin, append(append([]string{"serve"}, args...), "--listen", "127.0.0.1:0", "--rate-calls", "0")...)
	// A benchmark that stops on a failure leaves no server (nor mount)
	// behind: the server gets SIGTERM, on which it unmounts.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := endpointRE.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return cmd, m[1]
		}
	}
	log.Fatal("depotfs serve exited before it was ready")
	return nil, ""
}

// Timed runs fn and returns how long it took.
func Timed(fn func()) time.Duration {
	start := time.Now()
	fn()
	return time.Since(start)
}

// Connect opens an MCP session on url for the client named name.
func Connect(url, name string) *client.Client {
	c, err := client.NewStreamableHttpClient(url)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		log.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: name, Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		log.Fatal(err)
	}
	return c
}

// Call calls a tool that must succeed.
func Call(c *client.Client, tool string, args map[string]any) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		log.Fatalf("%s: %v %+v", tool, err, res)
	}
}

// Quantile is the p-th quantile of d (the lower middle for an even
// count's median), rounded to 10 µs; 0 for none.
func Quantile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))].Round(10 * time.Microsecond)
}
