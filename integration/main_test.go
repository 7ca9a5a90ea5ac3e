package integration_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// depotfsBin is the binary under test, built once by TestMain: without the
// race detector unless raceDaemon is set.
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
	binDir = dir
	if tmp, ok := tmpfsDir(); ok {
		defer os.RemoveAll(tmp)
		os.Setenv("TMPDIR", tmp)
	}
	flag.Parse()
	parallelByDefault()
	depotfsBin = filepath.Join(dir, "depotfs")
	race := raceDaemon && !benchmarking()
	if err := buildDepotfs(context.Background(), depotfsBin, race); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if !race {
		// Built while the first tests run, for the few that ask for it;
		// stopped if the tests end first (a -run that needs none).
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		raceBuildCtx = ctx
		go raceBin()
	}
	return m.Run()
}

// tmpfsDir makes a directory for the tests' temporary files on tmpfs
// (/dev/shm, where it is writable, allows executing and has 4 GiB free), which TestMain makes
// $TMPDIR, so that t.TempDir, the daemons' databases and their staging
// are there. The daemons commit with fsync, which on a disk the other
// tests (and other users of the machine) keep busy cost tens of
// milliseconds a commit: the stalled backup test's 80 commits of 1 MiB took
// 28 s on the disk and 13 s on tmpfs. A SIGKILLed daemon loses no more there
// than on a disk (what it wrote is in the page cache either way), and no
// test cuts the machine's power. $DEPOTFS_INTEGRATION_DISK=1 keeps them on
// the system's temporary directory. The binaries stay there too: /dev/shm
// is mounted noexec on some systems.
func tmpfsDir() (string, bool) {
	if os.Getenv("DEPOTFS_INTEGRATION_DISK") != "" {
		return "", false
	}
	var st syscall.Statfs_t
	const tmpfsMagic, stNoexec = 0x01021994, 0x8
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != tmpfsMagic || st.Flags&stNoexec != 0 {
		return "", false
	}
	// A container's /dev/shm is often 64 MiB: tests that stage hundreds of
	// MiB would fail there for want of room, not for a bug.
	const enough = 4 << 30
	if uint64(st.Bavail)*uint64(st.Bsize) < enough {
		return "", false
	}
	dir, err := os.MkdirTemp("/dev/shm", "depotfs-integration-")
	if err != nil {
		return "", false
	}
	return dir, true
}

// diskTmp is the system's temporary directory, where diskTempDir makes
// directories: $TMPDIR before TestMain moved it to tmpfs.
var diskTmp = os.TempDir()

// diskTempDir returns a directory on the system's temporary directory,
// removed when t ends, for a test whose daemon behaves differently on
// tmpfs (a sealed depot lets passthrough copy plaintext only to memory).
func diskTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp(diskTmp, "depotfs-disk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// raceBuildCtx bounds raceBin's background build to the run of the tests.
var raceBuildCtx = context.Background()

// raceDaemon is DEPOTFS_RACE_DAEMON=1 or DEPOTFS_SOAK=1: every daemon the
// tests start is built with the race detector. By default only the daemons
// of the tests that set daemonConfig.race are. A race-built daemon cost a
// third more CPU and a fifth more wall time in the largest tests, and the
// concurrency inside the daemon is already run under -race by the store,
// vfs and mcpserver packages' own tests; the tests that drive the daemon's
// concurrency end to end (three hosts, the sessions loop, a shutdown over
// stdio)
// keep a race-built daemon, whose reports fail the test (see daemon.stop).
var raceDaemon = os.Getenv("DEPOTFS_RACE_DAEMON") != "" || soak

// binDir holds the binaries TestMain and raceBin build.
var binDir string

// raceBin returns the path of depotfs built with the race detector, once
// TestMain's background build of it is done (when raceDaemon is set,
// depotfsBin is that binary and raceBin is not used).
var raceBin = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "depotfs-race")
	return bin, buildDepotfs(raceBuildCtx, bin, true)
})

// benchmarking reports whether -test.bench was given: benchmarks measure
// the binary as shipped, without the race detector.
func benchmarking() bool {
	f := flag.Lookup("test.bench")
	return f != nil && f.Value.String() != ""
}

// buildDepotfs builds cmd/depotfs into bin; cancelling ctx kills go build
// and the compilers it started. -buildvcs=auto overrides a
// GOFLAGS=-buildvcs=false so that, in a git checkout, the version test sees
// the revision.
func buildDepotfs(ctx context.Context, bin string, race bool) error {
	args := []string{"build", "-buildvcs=auto", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, "../cmd/depotfs")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// The output goes into the error, not to os.Stderr: the race-built
	// binary is built while testing.M.Run owns that variable.
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building depotfs (race %v): %w\n%s", race, err, out)
	}
	return nil
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
