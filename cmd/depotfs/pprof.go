//go:build pprof

package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // the profiling handlers, on http.DefaultServeMux
	"os"
)

// A binary built with -tags pprof serves net/http/pprof at the address in
// $DEPOTFS_PPROF, for profiling the server under a benchmark
// (bench/scale.sh -profile). Release builds have no such door: the
// handlers are unauthenticated and a CPU profile costs the server time.
// Only `depotfs serve` listens: the clients a benchmark runs (push,
// snapshot) inherit the variable too. Nothing else in the binary uses
// http.DefaultServeMux, so the profiles are all it serves.
func init() {
	addr := os.Getenv("DEPOTFS_PPROF")
	if addr == "" || len(os.Args) < 2 || os.Args[1] != "serve" {
		return
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "DEPOTFS_PPROF: %v\n", err)
		os.Exit(2)
	}
	go http.Serve(ln, nil)
}
