package bolt_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/bolt"
	"github.com/depotfs/depotfs/store/storetest"
	bbolt "go.etcd.io/bbolt"
)

// openAt opens the store at path with opts, without fsync (no test of
// this package cuts the machine's power, and a killed process keeps what
// it wrote: the crash tests' children open their stores themselves, with
// fsync). When t ends it checks the file's invariants (unless the test
// closed the store) and closes it.
func openAt(t testing.TB, path string, opts *bolt.Options) *bolt.Store {
	t.Helper()
	var o bolt.Options
	if opts != nil {
		o = *opts
	}
	o.NoSync = true
	s, err := bolt.Open(path, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	t.Cleanup(func() { verify(t, s) })
	return s
}

// verify fails t if s's file breaks an invariant; a closed store is not
// checked.
func verify(t testing.TB, s *bolt.Store) {
	t.Helper()
	if _, err := s.Revision(context.Background()); errors.Is(err, store.ErrClosed) {
		return
	}
	if err := bolt.Verify(s); err != nil {
		t.Errorf("store invariants: %v", err)
	}
}

// openTemp opens a new store in a temporary directory.
func openTemp(t testing.TB, opts *bolt.Options) (*bolt.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "depot.db")
	return openAt(t, path, opts), path
}

func stats(t testing.TB, s *bolt.Store) bolt.Stats {
	t.Helper()
	st, err := bolt.ReadStats(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// clock is a fake Options.Now.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) Now() time.Time          { return time.Unix(0, c.ns.Load()).UTC() }
func (c *clock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// opener opens stores for the conformance suite, with base's options and
// the suite's limits and clock.
func opener(base bolt.Options) storetest.Opener {
	return func(t *testing.T, cfg storetest.Config) store.Store {
		o := base
		o.MaxStoreBytes, o.MaxFileBytes, o.Now, o.KeepVersions = cfg.MaxStoreBytes, cfg.MaxFileBytes, cfg.Now, cfg.KeepVersions
		o.Quotas, o.History = cfg.Quotas, cfg.History
		if cfg.BigContent && o.ChunkSize != 0 {
			o.ChunkSize = 64 << 10
		}
		s, _ := openTemp(t, &o)
		return s
	}
}

// The three conformance suites run in parallel with each other (and the
// package's other parallel tests): each is sequential and uses well under
// one core, and they were most of the package's time one after another.

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.RunAll(t, opener(bolt.Options{}))
}

// TestReopenConformance runs the suite's reopening part: the same file
// opened again, the previous store closed first (one process holds it).
func TestReopenConformance(t *testing.T) {
	storetest.RunReopen(t, func(t *testing.T) func(cfg storetest.Config) store.Store {
		path := filepath.Join(t.TempDir(), "depot.db")
		var prev *bolt.Store
		return func(cfg storetest.Config) store.Store {
			if prev != nil {
				if err := prev.Close(); err != nil {
					t.Fatal(err)
				}
			}
			s, err := bolt.Open(path, &bolt.Options{MaxStoreBytes: cfg.MaxStoreBytes, MaxFileBytes: cfg.MaxFileBytes, Now: cfg.Now, KeepVersions: cfg.KeepVersions, History: cfg.History, NoSync: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			prev = s
			return s
		}
	})
}

// TestSharedConformance runs the two-host part of the suite with one
// store as both hosts: bolt allows one process per file.
func TestSharedConformance(t *testing.T) {
	open := opener(bolt.Options{})
	storetest.RunShared(t, func(t *testing.T, cfg storetest.Config) (store.Store, store.Store) {
		s := open(t, cfg)
		return s, s
	})
}

// TestConformanceSmallChunks runs the suite with blobs of many chunks, so
// reads cross chunk boundaries.
func TestConformanceSmallChunks(t *testing.T) {
	t.Parallel()
	storetest.RunAll(t, opener(bolt.Options{ChunkSize: 40}))
}

func TestOpenLocked(t *testing.T) {
	_, path := openTemp(t, nil)
	start := time.Now()
	s, err := bolt.Open(path, nil)
	if err == nil {
		s.Close()
		t.Fatal("a second Open of a file in use succeeded")
	}
	var locked *bolt.LockedError
	if !errors.Is(err, bolt.ErrLocked) || !errors.As(err, &locked) || locked.PID != os.Getpid() ||
		!strings.Contains(locked.Command, filepath.Base(os.Args[0])) {
		t.Errorf("second Open: %v (%+v), want ErrLocked naming this process", err, locked)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second Open took %v to fail", d)
	}
}

// TestOpenLockedByOther: a database held by a program that is not
// depotfs (bbolt's own lock, no DB.lock holder) is ErrLocked without a pid.
func TestOpenLockedByOther(t *testing.T) {
	path := filepath.Join(t.TempDir(), "depot.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = bolt.Open(path, nil)
	var locked *bolt.LockedError
	if !errors.As(err, &locked) || locked.PID != 0 || !strings.Contains(err.Error(), "not a depotfs") {
		t.Errorf("Open of a database bbolt holds: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := bolt.Open(filepath.Join(dir, "missing", "depot.db"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open in a missing directory: %v", err)
	}
	for _, o := range []bolt.Options{
		{ChunkSize: -1}, {ChunkSize: 1 << 30}, {History: -1}, {UploadTimeout: -time.Second},
		{MaxStoreBytes: -1}, {MaxFileBytes: -1}, {SweepInterval: -time.Second}, {FlushInterval: -time.Second},
	} {
		if _, err := bolt.Open(filepath.Join(dir, "x.db"), &o); !errors.Is(err, fs.ErrInvalid) {
			t.Errorf("Open with %+v: %v, want fs.ErrInvalid", o, err)
		}
	}
	bad := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(bad, []byte("this is not a bbolt file, not at all, no"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := bolt.Open(bad, nil); err == nil {
		s.Close()
		t.Error("Open of a file that is not a database succeeded")
	}
}

func TestFileMode(t *testing.T) {
	_, path := openTemp(t, nil)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("database file mode %v, want 0600", fi.Mode().Perm())
	}
}
