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
	parallelByDefault()
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

// defaultParallel is how many tests run at once unless -parallel says
// otherwise. The tests spend most of their time waiting on daemons, mounts
// and NATS elections rather than on a core, so go test's default (one per
// core) left two cores half idle and the package took about nine minutes.
const defaultParallel = 8

// parallelByDefault raises -parallel to defaultParallel when the command
// line did not set it.
func parallelByDefault() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(defaultParallel))
	}
}
