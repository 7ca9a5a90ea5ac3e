package vfs_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/vfs"
)

// logBuffer collects a mount's log lines; tests read it, and print it when
// they fail.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// soak is DEPOTFS_SOAK=1, the switch of the test suite's long versions:
// the tests that repeat something to catch a race repeat it more.
var soak = os.Getenv("DEPOTFS_SOAK") != ""

// bySoak returns long under DEPOTFS_SOAK=1 and short otherwise.
func bySoak(short, long int) int {
	if soak {
		return long
	}
	return short
}

// newStore opens a bolt store in a fresh temporary directory, without
// fsync (no test here cuts the power), closed when the test ends (after
// any mount of it is unmounted).
func newStore(tb testing.TB, opts *bolt.Options) (*bolt.Store, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "depot.db")
	var o bolt.Options
	if opts != nil {
		o = *opts
	}
	o.NoSync = true
	st, err := bolt.Open(path, &o)
	if err != nil {
		tb.Fatalf("open store: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st, path
}

// testMount is a mounted store and its log.
type testMount struct {
	*vfs.Server
	log     *logBuffer
	blobDir string // the blob cache's directory; "" without passthrough
}

// cachedBlobs lists the blobs (not their seals) in the mount's blob cache.
func cachedBlobs(tb testing.TB, m *testMount) []string {
	tb.Helper()
	if m.blobDir == "" {
		return nil
	}
	des, err := os.ReadDir(m.blobDir)
	if err != nil {
		tb.Fatalf("blob cache: %v", err)
	}
	var out []string
	for _, de := range des {
		if name := de.Name(); len(name) == 64 && !strings.ContainsAny(name, ".-") {
			out = append(out, name) // not a seal or an unfinished fill
		}
	}
	return out
}

// path returns the host path of a depot path in the mount.
func (m *testMount) path(p string) string { return filepath.Join(m.Dir(), filepath.FromSlash(p)) }

// mount mounts st on a fresh temporary directory, unmounted when the test
// ends, even if it fails. opts may be nil; its Logger is replaced by a
// buffer that is printed if the test fails.
func mount(tb testing.TB, st store.Store, opts *vfs.Options) *testMount {
	tb.Helper()
	return mountAt(tb, filepath.Join(tb.TempDir(), "mnt"), st, opts)
}

func mountAt(tb testing.TB, dir string, st store.Store, opts *vfs.Options) *testMount {
	tb.Helper()
	var o vfs.Options
	if opts != nil {
		o = *opts
	}
	if !o.Passthrough && os.Getenv("DEPOTFS_PASSTHROUGH") != "false" {
		// Every mount test runs with passthrough on, unless told not
		// to: run them with DEPOTFS_PASSTHROUGH=false for the other way.
		o.Passthrough, o.BlobCacheDir, o.BlobCacheBytes = true, filepath.Join(tb.TempDir(), "blobs"), 1<<30
	}
	logs := &logBuffer{}
	o.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m, err := vfs.Mount(context.Background(), dir, st, &o)
	if err != nil {
		tb.Fatalf("mount: %v", err)
	}
	tb.Cleanup(func() {
		if err := m.Unmount(); err != nil {
			tb.Errorf("unmount: %v", err)
		}
		if tb.Failed() {
			tb.Logf("mount log:\n%s", logs)
		}
	})
	tm := &testMount{Server: m, log: logs}
	if m.Passthrough() {
		tm.blobDir = o.BlobCacheDir
	}
	return tm
}

// put stores data at p and waits until the mount has applied the change.
func put(tb testing.TB, st store.Store, m *testMount, req store.PutRequest) store.PutResult {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := st.Put(ctx, req)
	if err != nil {
		tb.Fatalf("put %s: %v", req.Path, err)
	}
	if m != nil {
		if err := m.WaitApplied(ctx, res.Entry.Revision); err != nil {
			tb.Fatalf("wait applied %d: %v", res.Entry.Revision, err)
		}
	}
	return res
}

// waitApplied waits until the mount has applied every change in st so far.
func waitApplied(tb testing.TB, st store.Store, m *testMount) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rev, err := st.Revision(ctx)
	if err != nil {
		tb.Fatalf("revision: %v", err)
	}
	if err := m.WaitApplied(ctx, rev); err != nil {
		tb.Fatalf("wait applied %d: %v", rev, err)
	}
}

// pattern returns n deterministic bytes that differ from offset to offset
// and from seed to seed, so a read at the wrong offset never matches.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// readFile is os.ReadFile that fails the test on error.
func readFile(tb testing.TB, p string) []byte {
	tb.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		tb.Fatalf("read: %v", err)
	}
	return b
}
