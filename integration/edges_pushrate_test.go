package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPushUnderByteRate: with --rate-bytes 1MiB and --rate-byte-burst
// 16MiB, an 18 MiB file (larger than the burst) is pushed at once from a
// full bucket; on another server a push of a 25 MiB directory (one tar
// stream, every file under the burst) passes at once too, and the small
// directory after it, which the debt the first left makes wait, is sent
// again after the wait the server asks for (TestAfterRate checks that
// path whatever the machine's load). Every file arrives whole, and
// the rate holds. A burst under the content one call may carry is refused
// at serve start with an error naming the minimum.
func TestPushUnderByteRate(t *testing.T) {
	t.Parallel()
	args := []string{"--rate-bytes", "1MiB", "--rate-byte-burst", "16MiB", "--rate-local"}
	src := t.TempDir()
	want := map[string][]byte{}
	write := func(rel string, size int, seed uint64) {
		t.Helper()
		b := pseudoRandom(size, seed)
		p := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[rel] = b
	}
	for i := range 5 {
		write(fmt.Sprintf("big/f%d.bin", i), 5<<20, uint64(i+1))
	}
	write("more/a.bin", 256<<10, 10)
	write("more/b.bin", 256<<10, 11)
	write("huge.bin", 18<<20, 12)
	push := func(d *daemon, paths ...string) (time.Duration, string) {
		t.Helper()
		start := time.Now()
		code, stdout, stderr := runDepotfs(t, append([]string{"push", "--url", d.url, "--to", "/in"}, paths...)...)
		took := time.Since(start)
		t.Logf("push %v: exit %d in %v\n%s%s", paths, code, took, stdout, stderr)
		if code != 0 {
			t.Fatalf("push under --rate-bytes: exit %d\n%s%s", code, stdout, stderr)
		}
		for rel, b := range want {
			if !slices.ContainsFunc(paths, func(p string) bool { return strings.HasPrefix(filepath.Join(src, rel), p) }) {
				continue
			}
			got, err := os.ReadFile(d.path("/in/" + rel))
			if err != nil || !bytes.Equal(got, b) {
				t.Errorf("/in/%s: %d bytes (%v), want %d bytes as sent", rel, len(got), err, len(b))
			}
		}
		return took, stderr
	}

	one := startDaemon(t, daemonConfig{transport: overHTTP, args: args})
	push(one, filepath.Join(src, "huge.bin"))

	two := startDaemon(t, daemonConfig{transport: overHTTP, args: args})
	took, stderr := push(two, filepath.Join(src, "big"), filepath.Join(src, "more"))
	// 25.5 MiB at 1 MiB/s with 16 MiB at once: at least 9.5 s, whether
	// push waited for a refusal (the usual case: the small directory
	// comes right after the debt) or its sends were slower than the rate
	// (a loaded machine storing the first stream for longer than the
	// debt takes to repay).
	if took < 9500*time.Millisecond {
		t.Errorf("push took %v; the rate limit allows it no sooner than 9.5 s", took)
	}
	if !strings.Contains(stderr, "rate limit asks to wait") {
		t.Logf("push was not refused: its sends were slower than the rate")
	}

	code, _, stderr := runDepotfsWith(t, 20*time.Second, "", nil, "serve", "--no-mount", "--listen", "127.0.0.1:0",
		"--db", filepath.Join(t.TempDir(), "depot.db"), "--rate-bytes", "1MiB", "--rate-byte-burst", "1MiB")
	if code != 2 || !strings.Contains(stderr, "--rate-byte-burst 1MiB is less than 16MiB") {
		t.Errorf("serve with a burst under one call's content: exit %d\n%s", code, stderr)
	}
}
