package integration_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store/nats/natstest"
)

// TestKeyRotateReencrypt rotates a sealed depot's key with --reencrypt
// through the binary and lets serve reseal the content under the new data
// key while 8 agents write, stopping serve halfway (the reseal is paced
// to 32 KiB/s there, so the first 1 MiB chunk holds it up for 30 s) and
// finishing after the restart: every file written before or during it
// reads back through the mount, the old key is refused, a second
// reencryption is refused while one is unfinished, and the next start
// has nothing left to reseal.
func TestKeyRotateReencrypt(t *testing.T) {
	t.Parallel()
	oldKey, newKey := writeKeyFile(t), writeKeyFile(t)
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: []string{"--key-file", oldKey}})
	want := map[string][]byte{
		"/big.bin":   bytes.Repeat([]byte(sealMarker+" big\n"), 100000), // 3 chunks of 1 MiB
		"/small.txt": []byte(sealMarker + " small\n"),
	}
	pushChunked(d, "/big.bin", want["/big.bin"], 1<<20, "big", -1)
	d.mustCall("guide_cache_file", map[string]any{"path": "/small.txt", "content": string(want["/small.txt"])})
	d.stop()

	rotate := func() (int, string, string) {
		return runDepotfs(t, "key", "rotate", "--db", d.db, "--key-file", oldKey, "--new-key-file", newKey, "--reencrypt")
	}
	if code, out, errOut := rotate(); code != 0 || !strings.Contains(out, "new data key dk-") {
		t.Fatalf("key rotate --reencrypt: exit %d\n%s%s", code, out, errOut)
	}

	args := func(rate string) []string { return []string{"--key-file", newKey, "--reseal-rate", rate} }
	d = startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: args("32KiB")})
	d.waitLogLine("the reseal starting", "reencrypting the depot's content")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				p := fmt.Sprintf("/w%d/f%02d.txt", w, i)
				content := fmt.Sprintf("%s writer %d file %d\n", sealMarker, w, i)
				if env, err := d.tryCall("guide_cache_file", map[string]any{"path": p, "content": content}); err != nil || !env.Success {
					t.Errorf("writer %d: %v %+v", w, err, env.Error)
					return
				}
				mu.Lock()
				want[p] = []byte(content)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for p, w := range want {
		if got, err := os.ReadFile(d.path(p)); err != nil || !bytes.Equal(got, w) {
			t.Fatalf("%s during the reseal: %d bytes, %v; want %d", p, len(got), err, len(w))
		}
	}
	if lines := d.logLines("reencryption finished"); len(lines) != 0 {
		t.Fatalf("the reseal finished before the restart, at 32 KiB/s: %s", lines[0])
	}
	d.stop()

	if code, out, errOut := rotate(); code == 0 || !strings.Contains(errOut, "still being reencrypted") {
		t.Errorf("a second --reencrypt before the first finished: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut := runDepotfs(t, "serve", "--db", d.db, "--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0", "--key-file", oldKey)
	if code == 0 || !strings.Contains(errOut, "wrong key") {
		t.Errorf("serve with the old key during the reseal: exit %d\n%s", code, tail(errOut, 5))
	}

	d = startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: args("64MiB")})
	d.waitLogLine("the reseal going on after the restart", "reencrypting the depot's content")
	waitFor(t, 60*time.Second, "the reseal to finish", func() bool { return len(d.logLines("reencryption finished")) > 0 })
	d.stop()

	d = startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: args("64MiB")})
	for p, w := range want {
		if got, err := os.ReadFile(d.path(p)); err != nil || !bytes.Equal(got, w) {
			t.Errorf("%s after the reseal: %d bytes, %v; want %d", p, len(got), err, len(w))
		}
	}
	if lines := d.logLines("reencrypting"); len(lines) != 0 {
		t.Errorf("a start after the reseal finished reseals again: %s", lines[0])
	}
	d.stop()
	if n := countIn(t, d.db); n != 0 {
		t.Errorf("the database holds the plaintext %d times", n)
	}
}

// TestKeyRotateNATS rotates the key-encryption key of a sealed NATS depot
// through the binary while a host serves it: the host goes on reading and
// writing, the old key then neither rotates again nor starts a host (both
// naming the keys), a host restarted with the new key reads everything,
// and --reencrypt is refused with the way to a new data key.
func TestKeyRotateNATS(t *testing.T) {
	t.Parallel()
	oldKey, newKey := writeKeyFile(t), writeKeyFile(t)
	cluster := natstest.Start(t, 3)
	prefix := fmt.Sprintf("rot%d", depotSeq.Add(1))
	hostArgs := func(key string) []string {
		return []string{"--store", cluster.URL(), "--nats-prefix", prefix, "--key-file", key}
	}
	d := startDaemon(t, daemonConfig{transport: overHTTP, args: hostArgs(oldKey)})
	want := map[string][]byte{"/before.txt": []byte(sealMarker + " before\n")}
	d.mustCall("guide_cache_file", map[string]any{"path": "/before.txt", "content": string(want["/before.txt"])})

	rotate := func(cur string, extra ...string) (int, string, string) {
		return runDepotfs(t, append([]string{"key", "rotate", "--store", cluster.URL(), "--nats-prefix", prefix,
			"--key-file", cur, "--new-key-file", newKey}, extra...)...)
	}
	code, out, errOut := rotate(oldKey)
	if code != 0 || !strings.Contains(out, "is now wrapped by key kek-") {
		t.Fatalf("key rotate: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("key rotate: %s", out)

	want["/after.txt"] = []byte(sealMarker + " after\n")
	d.mustCall("guide_cache_file", map[string]any{"path": "/after.txt", "content": string(want["/after.txt"])})
	readAll := func(d *daemon) {
		t.Helper()
		for p, w := range want {
			if got, err := os.ReadFile(d.path(p)); err != nil || !bytes.Equal(got, w) {
				t.Fatalf("%s: %q, %v; want %q", p, got, err, w)
			}
		}
	}
	readAll(d)

	if code, out, errOut := rotate(oldKey); code == 0 || !strings.Contains(errOut, "wrong key") || !strings.Contains(errOut, "kek-") {
		t.Errorf("a second rotation with the old key: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := rotate(newKey, "--reencrypt"); code == 0 || !strings.Contains(errOut, "not available for a NATS depot") ||
		!strings.Contains(errOut, "depotfs export") || !strings.Contains(errOut, "depotfs import") {
		t.Errorf("--reencrypt on NATS: exit %d\n%s%s", code, out, errOut)
	}
	d.stop()

	code, _, errOut = runDepotfs(t, append([]string{"serve", "--db", filepath.Join(t.TempDir(), "depot.db"),
		"--mount", filepath.Join(t.TempDir(), "m"), "--listen", "127.0.0.1:0"}, hostArgs(oldKey)...)...)
	if code == 0 || !strings.Contains(errOut, "wrong key") || !strings.Contains(errOut, "kek-") {
		t.Errorf("a host started with the old key after the rotation: exit %d\n%s", code, tail(errOut, 5))
	}
	d = startDaemon(t, daemonConfig{transport: overHTTP, db: d.db, mount: d.mount, args: hostArgs(newKey)})
	readAll(d)
}
