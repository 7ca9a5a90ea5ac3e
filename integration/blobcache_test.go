package integration_test

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBlobCacheSurvivesRestart pushes a file large enough for passthrough,
// reads it, and restarts depotfs twice over the same database and blob
// cache: the first restart serves the blob it kept without copying it
// again (the metrics count a kept blob, a hit and no fill); before the
// second, the blob file is overwritten behind depotfs's back, and the
// restart drops it and reads the store's bytes.
func TestBlobCacheSurvivesRestart(t *testing.T) {
	t.Parallel()
	cfg := daemonConfig{transport: overHTTP, args: []string{"--metrics-listen", "127.0.0.1:0"}}
	d := startDaemon(t, cfg)
	cfg.db, cfg.mount = d.db, d.mount
	content := strings.Repeat("blob cache ", 100_000) // 1.1 MB
	sum := sha256.Sum256([]byte(content))
	blob := filepath.Join(filepath.Dir(d.db), "blobs", hex.EncodeToString(sum[:]))
	d.mustCall("guide_cache_file", map[string]any{"path": "/big.txt", "content": content})

	// metrics reads the blob cache figures of the running daemon, or
	// skips the test when passthrough is off.
	metrics := func(d *daemon) map[string]float64 {
		t.Helper()
		side := metricsRE.FindStringSubmatch(d.logs.String())
		if side == nil {
			t.Fatalf("no metrics address in the log:\n%s", d.logs)
		}
		_, fams := scrape(t, side[1]+"/metrics", "")
		if _, ok := fams["depotfs_blob_cache_fills_total"]; !ok {
			t.Skip("passthrough is off (not root, no kernel support, or DEPOTFS_PASSTHROUGH=false)")
		}
		return map[string]float64{
			"kept":    value(t, fams, "depotfs_blob_cache_start_blobs", "result", "kept"),
			"dropped": value(t, fams, "depotfs_blob_cache_start_blobs", "result", "dropped"),
			"hits":    value(t, fams, "depotfs_blob_cache_hits_total"),
			"fills":   value(t, fams, "depotfs_blob_cache_fills_total"),
		}
	}
	read := func(d *daemon) {
		t.Helper()
		got, err := os.ReadFile(d.path("/big.txt"))
		if err != nil || string(got) != content {
			t.Fatalf("reading /big.txt through the mount: %v (%d bytes, want %d)", err, len(got), len(content))
		}
	}
	read(d)
	if m := metrics(d); m["fills"] != 1 {
		t.Fatalf("before the restart: %v; want the blob copied in once", m)
	}

	d = d.restart()
	read(d)
	if m := metrics(d); m["kept"] != 1 || m["dropped"] != 0 || m["fills"] != 0 || m["hits"] < 1 {
		t.Errorf("after a restart: %v; want the blob kept and served (a hit) without a fill", m)
	}

	d.stop()
	overwrite(t, blob, strings.Repeat("tampered!! ", 100_000))
	d = startDaemon(t, cfg)
	// The fill runs in the open, and an open the kernel interrupts (a
	// signal to the reader: the Go runtime preempts a thread blocked in
	// a syscall with SIGURG) stops it and reads from the store instead;
	// so an open may pass without a fill, and the next fills.
	var m map[string]float64
	waitFor(t, 30*time.Second, "the store's bytes copied into the blob cache", func() bool {
		read(d)
		m = metrics(d)
		return m["fills"] >= 1
	})
	if m["kept"] != 0 || m["dropped"] != 1 || m["fills"] != 1 {
		t.Errorf("after a restart over a tampered blob file: %v; want it dropped and the store's bytes copied in again", m)
	}
}

// overwrite replaces the bytes of the file at p with data of the same
// length and sets its mode and times back. It waits first until the
// filesystem's clock has moved past the file's last change, so that the
// write moves its change time even where timestamps are coarse.
func overwrite(t *testing.T, p, data string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	changed := fi.Sys().(*syscall.Stat_t).Ctim.Nano()
	probe := p + ".probe"
	defer os.Remove(probe)
	waitFor(t, 5*time.Second, "the filesystem clock to move", func() bool {
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		pi, err := os.Stat(probe)
		return err == nil && pi.Sys().(*syscall.Stat_t).Ctim.Nano() > changed
	})
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, fi.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}
