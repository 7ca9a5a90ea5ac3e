package integration_test

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run real programs on the mount where a local
// filesystem (tmpfs, with the rename-replace the README describes for
// updates) and depotfs could differ: an open racing an update, mmap, tail
// -F on a growing log, find on directory times and sizes, link counts.

// needProgram skips the test when a program it runs is not installed.
func needProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

// makeZip returns a zip archive of n stored (uncompressed) members of size
// bytes each, seeded by seed: unzip -t reads every byte and checks the
// central directory at the end, so a reader that mixes sizes fails it.
func makeZip(t testing.TB, n, size int, seed uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("member%02d.bin", i), Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(pseudoRandom(size, seed+uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestUnzipDuringPushes runs unzip -tqq in a loop on two archives while
// each is pushed 12 times (30 with DEPOTFS_SOAK=1; the unzip loops keep
// both cores busy, so the default is short), alternating two versions of
// different sizes:
// every run must pass. unzip stats the file, then opens it and trusts the
// size it stat'ed; an open that raced an update used to read the new
// bytes with the old size, and unzip found no end-of-central-directory.
// One archive is large enough for passthrough, the other is not.
func TestUnzipDuringPushes(t *testing.T) {
	t.Parallel()
	unzip := needProgram(t, "unzip")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	archives := map[string][][]byte{
		"/race/large.zip": {makeZip(t, 4, 80<<10, 1), makeZip(t, 4, 80<<10+1031, 2)},
		"/race/small.zip": {makeZip(t, 4, 10<<10, 3), makeZip(t, 4, 10<<10+1031, 4)},
	}
	for p, versions := range archives {
		pushBytes(d, p, versions[0], nil)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var runs, failures atomic.Int64
	var failMu sync.Mutex
	var firstFailures []string
	var wg sync.WaitGroup
	for p := range archives {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				out, err := exec.Command(unzip, "-tqq", d.path(p)).CombinedOutput()
				runs.Add(1)
				if err != nil {
					failures.Add(1)
					failMu.Lock()
					if len(firstFailures) < 3 {
						firstFailures = append(firstFailures, fmt.Sprintf("%v: %s", err, out))
					}
					failMu.Unlock()
				}
			}
		}()
	}
	pushes := bySoak(12, 30)
	for i := 1; i <= pushes; i++ {
		for p, versions := range archives {
			pushBytes(d, p, versions[i%2], nil)
		}
	}
	cancel()
	wg.Wait()
	t.Logf("unzip -tqq: %d runs during %d pushes, %d failed", runs.Load(), pushes*len(archives), failures.Load())
	if failures.Load() > 0 {
		t.Errorf("%d of %d unzip runs failed; the first:\n%s", failures.Load(), runs.Load(), strings.Join(firstFailures, "\n"))
	}
}

// TestOpenSizeMatchesContent opens a file over and over while it is
// updated 24 times (60 with DEPOTFS_SOAK=1) between two versions of
// different sizes: what fstat says after
// each open must be what read returns, and a shared mapping of that size
// must hold one whole version. (tmpfs: always.)
func TestOpenSizeMatchesContent(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--rate-calls", "0"}})
	versions := [][]byte{pseudoRandom(100_000, 7), pseudoRandom(101_031, 8)}
	sums := map[string]bool{sha256hex(versions[0]): true, sha256hex(versions[1]): true}
	const p = "/race/data.bin"
	pushBytes(d, p, versions[0], nil)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var opens, mismatches atomic.Int64
	errs := make(chan error, 5) // the first few, kept for the report
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := readChecked(d.path(p), sums); err != nil {
					mismatches.Add(1)
					select {
					case errs <- err:
					default:
					}
				}
				opens.Add(1)
			}
		}()
	}
	updates := bySoak(24, 60)
	for i := 1; i <= updates; i++ {
		pushBytes(d, p, versions[i%2], nil)
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d opens during %d updates, %d mismatches", opens.Load(), updates, mismatches.Load())
}

// readChecked opens p, reads it whole and maps it, and fails unless both
// match the size fstat gave after the open and hold one of sums.
func readChecked(p string, sums map[string]bool) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if int64(len(b)) != fi.Size() {
		return fmt.Errorf("fstat says %d bytes, read returned %d", fi.Size(), len(b))
	}
	if !sums[sha256hex(b)] {
		return fmt.Errorf("read %d bytes that are no version", len(b))
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return fmt.Errorf("mmap of %d bytes: %w", fi.Size(), err)
	}
	defer syscall.Munmap(m)
	if !sums[sha256hex(m)] {
		return fmt.Errorf("a mapping of %d bytes holds no version", len(m))
	}
	return nil
}

// TestMmapAroundPageCache maps, with python's mmap(MAP_SHARED,
// PROT_READ), a file larger than the blob cache: such a file is served
// with direct I/O (it may not enter the page cache of an inode that
// passthrough may serve), which the kernel refuses to map unless the
// mount allows it (FUSE_DIRECT_IO_ALLOW_MMAP).
func TestMmapAroundPageCache(t *testing.T) {
	t.Parallel()
	python := needProgram(t, "python3")
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--blob-cache-size", "1MiB"}})
	data := pseudoRandom(3<<20, 11)
	const p = "/big/large.bin"
	// One raw PUT: base64 chunks through MCP calls cost the race-built
	// test's JSON a second of CPU per MiB, and how the bytes arrived is
	// not what this test is about.
	u := beginUpload(t, d, map[string]any{"path": p, "size": len(data)})
	if r := put(t, u, bytes.NewReader(data), int64(len(data)), ""); r.Status != 200 {
		t.Fatalf("PUT %s: %d %+v", p, r.Status, r.Env.Error)
	}
	script := `import hashlib, mmap, sys
with open(sys.argv[1], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
    print(hashlib.sha256(m).hexdigest())
`
	out, err := exec.Command(python, "-c", script, d.path(p)).CombinedOutput()
	if err != nil {
		t.Fatalf("python mmap: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != sha256hex(data) {
		t.Errorf("python mmap hashed %s, want %s", got, sha256hex(data))
	}
}

// TestTailPrintsOnlyAppended runs tail -F on a log that is pushed again
// six times, each push the previous content plus a line: tail must print
// each line once, as it does when a program appends to a local file. A
// push that keeps the old bytes keeps the inode and grows it.
func TestTailPrintsOnlyAppended(t *testing.T) {
	t.Parallel()
	needProgram(t, "tail")
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	const p = "/logs/grow.log"
	var log strings.Builder
	line := func(i int) string { return fmt.Sprintf("line %d of the log\n", i) }
	log.WriteString(line(1))
	d.mustCall("guide_cache_file", map[string]any{"path": p, "content": log.String()})
	var out lockedBuffer
	// tail polls a FUSE mount; -s 0.1 polls every 100 ms.
	cmd := exec.Command("tail", "-F", "-s", "0.1", "-n", "+1", d.path(p))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, 10*time.Second, "tail to print line 1", func() bool { return strings.Contains(out.String(), "line 1 ") })
	for i := 2; i <= 7; i++ {
		log.WriteString(line(i))
		d.mustCall("guide_cache_file", map[string]any{"path": p, "content": log.String()})
		want := fmt.Sprintf("line %d ", i)
		waitFor(t, 10*time.Second, "tail to print "+want, func() bool { return strings.Contains(out.String(), want) })
	}
	if got := out.String(); got != log.String() {
		t.Errorf("tail -F printed %d lines for 7 distinct:\n%s", strings.Count(got, "\n"), got)
	}
}

// TestDirMtimeMovesOnUpdate checks that updating a file moves its
// directory's mtime, as a rename-replace does on a local filesystem:
// find -newer lists the directory.
func TestDirMtimeMovesOnUpdate(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/src/main.c", "content": "int main(void) { return 0; }\n"})
	// ref is newer than the push and older than the update.
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.WriteFile(ref, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a clock tick apart, not readiness
	d.mustCall("guide_cache_file", map[string]any{"path": "/proj/src/main.c", "content": "int main(void) { return 1; }\n"})
	out := runProgram(t, "find", d.path("/proj"), "-newer", ref)
	got := strings.Fields(out)
	want := []string{d.path("/proj/src"), d.path("/proj/src/main.c")}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("find -newer listed %q, want %q", got, want)
	}
}

// TestLinkCountsAndDirSizes checks st_nlink of a file held open across an
// update and across a removal (0 both times, as on tmpfs), and that
// directories have a size, so find -size 0 lists only empty files.
func TestLinkCountsAndDirSizes(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--tools", "guide,fs"}})
	d.mustCall("guide_cache_file", map[string]any{"path": "/n/updated.txt", "content": "first\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/n/removed.txt", "content": "doomed\n"})
	d.mustCall("guide_cache_file", map[string]any{"path": "/n/sub/empty.txt", "content": ""})
	nlink := func(f *os.File) uint64 {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return uint64(st.Nlink)
	}
	updated, err := os.Open(d.path("/n/updated.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer updated.Close()
	removed, err := os.Open(d.path("/n/removed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer removed.Close()
	if n := nlink(updated); n != 1 {
		t.Errorf("st_nlink of an open file = %d, want 1", n)
	}
	d.mustCall("guide_cache_file", map[string]any{"path": "/n/updated.txt", "content": "second, not an append\n"})
	d.mustCall("delete", map[string]any{"path": "n/removed.txt"})
	if n := nlink(updated); n != 0 {
		t.Errorf("st_nlink of a file held open across an update = %d, want 0", n)
	}
	if n := nlink(removed); n != 0 {
		t.Errorf("st_nlink of a file held open across its removal = %d, want 0", n)
	}
	if b, err := io.ReadAll(updated); err != nil || string(b) != "first\n" {
		t.Errorf("the held file reads %q, %v; want its own version", b, err)
	}
	if got := runProgram(t, "find", d.path("/n"), "-size", "0"); strings.TrimSpace(got) != d.path("/n/sub/empty.txt") {
		t.Errorf("find -size 0 listed:\n%s\nwant only the empty file", got)
	}
	fi, err := os.Stat(d.path("/n/sub"))
	if err != nil || fi.Size() == 0 {
		t.Errorf("a directory's size: %v, %v; want non-zero", fi, err)
	}
}

// TestCpArchiveLeavesProvenance copies a file from the mount with cp -a:
// the copy on disk must not carry the user.depotfs.* attributes (they
// would call a copy "stored", with a hash nobody checks), which stay
// readable by name on the mount.
func TestCpArchiveLeavesProvenance(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonConfig{transport: overHTTP})
	d.mustCall("guide_cache_file", map[string]any{"path": "/cp/f.txt", "content": "copied\n"})
	dst := filepath.Join(t.TempDir(), "copy")
	runProgram(t, "cp", "-a", d.path("/cp"), dst)
	buf := make([]byte, 4096)
	for _, p := range []string{dst, filepath.Join(dst, "f.txt")} {
		n, err := syscall.Listxattr(p, buf)
		if err != nil && !errors.Is(err, syscall.ENOTSUP) {
			t.Fatalf("listxattr %s: %v", p, err)
		}
		if strings.Contains(string(buf[:n]), "depotfs") {
			t.Errorf("cp -a copied %q onto %s", strings.ReplaceAll(string(buf[:n]), "\x00", " "), p)
		}
	}
	n, err := syscall.Getxattr(d.path("/cp/f.txt"), "user.depotfs.state", buf)
	if err != nil || string(buf[:n]) != "stored" {
		t.Errorf("user.depotfs.state on the mount = %q, %v; want stored", buf[:n], err)
	}
	n, err = syscall.Getxattr(d.path("/cp/f.txt"), "user.depotfs.sha256", buf)
	if err != nil || string(buf[:n]) != sha256hex([]byte("copied\n")) {
		t.Errorf("user.depotfs.sha256 on the mount = %q, %v", buf[:n], err)
	}
}
