//go:build benchprof

package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
)

// A binary built with -tags benchprof profiles itself for the benchmark
// scripts (bench/ingest/run.sh with BENCH_PROFILE): DEPOTFS_CPUPROFILE and
// DEPOTFS_TRACE name the files of a CPU profile and an execution trace
// started at once, and SIGUSR1 ends both. Each is written beside its name
// and renamed into place when complete, so a script polls for the name.
// Release builds have none of this: profiling a server is a benchmark's
// business, not a flag an operator should meet.
func init() {
	cpu, tr := os.Getenv("DEPOTFS_CPUPROFILE"), os.Getenv("DEPOTFS_TRACE")
	if cpu == "" && tr == "" {
		return
	}
	var stops []func() error
	if cpu != "" {
		stop, err := startProfile(cpu, pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchprof:", err)
			os.Exit(2)
		}
		stops = append(stops, stop)
	}
	if tr != "" {
		stop, err := startProfile(tr, trace.Start, trace.Stop)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchprof:", err)
			os.Exit(2)
		}
		stops = append(stops, stop)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		<-sig
		signal.Stop(sig)
		for _, stop := range stops {
			if err := stop(); err != nil {
				fmt.Fprintln(os.Stderr, "benchprof:", err)
			}
		}
	}()
}

// startProfile starts writing a profile to name+".part" and returns the
// function that ends it and renames the file to name.
func startProfile(name string, start func(w io.Writer) error, stop func()) (func() error, error) {
	f, err := os.Create(name + ".part")
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return func() error {
		stop()
		if err := f.Close(); err != nil {
			return err
		}
		return os.Rename(name+".part", name)
	}, nil
}
