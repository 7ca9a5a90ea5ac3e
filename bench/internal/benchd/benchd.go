// Package benchd is what the benchmark programs under bench/ share: a
// depotfs server started for a run, and a stopwatch.
package benchd

import (
	"bufio"
	"io"
	"log"
	"os/exec"
	"regexp"
	"time"
)

var endpointRE = regexp.MustCompile(`mcp=(https?://\S+/mcp)`)

// Serve starts `bin serve` with args on a free local port, without a call
// rate limit (a benchmark's client is the load), and returns the process
// and its MCP endpoint once its ready line says where that is. It stops
// the program on failure: benchmarks have nothing to fall back to.
func Serve(bin string, args ...string) (*exec.Cmd, string) {
	cmd := exec.Command(bin, append(append([]string{"serve"}, args...), "--listen", "127.0.0.1:0", "--rate-calls", "0")...)
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
