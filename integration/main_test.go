package integration_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// depotfsBin is the binary under test, built once by TestMain.
var depotfsBin string

func TestMain(m *testing.M) {
	// The several-hosts tests run NATS servers as copies of this binary.
	natstest.Main()
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "integration tests mount FUSE filesystems and must run as root")
		return 1
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		fmt.Fprintf(os.Stderr, "integration tests need /dev/fuse: %v\n", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "depotfs-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	depotfsBin = filepath.Join(dir, "depotfs")
	// Tests run the binary with the race detector; benchmarks measure the
	// binary as shipped. -buildvcs=auto overrides a GOFLAGS=-buildvcs=false
	// so that, in a git checkout, the version test sees the revision.
	flag.Parse()
	args := []string{"build", "-buildvcs=auto", "-race", "-o", depotfsBin, "../cmd/depotfs"}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		args = []string{"build", "-buildvcs=auto", "-o", depotfsBin, "../cmd/depotfs"}
	}
	build := exec.Command("go", args...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building depotfs: %v\n", err)
		return 1
	}
	return m.Run()
}
