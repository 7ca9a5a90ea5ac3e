package audit_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// waitCheckpoint polls the checkpoint of the log at path until it names
// seq, failing after a deadline far beyond any bound a test sets.
func waitCheckpoint(t testing.TB, path string, seq uint64) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, hash, err := audit.ReadCheckpoint(path)
		if err != nil {
			t.Fatal(err)
		}
		if got == seq {
			return hash
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint at %d, want %d", got, seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAppendDeferredBecomesDurable: records appended deferred are in the
// file at once, in order, and the flusher brings the checkpoint up to the
// last of them by itself; the chain verifies.
func TestAppendDeferredBecomesDurable(t *testing.T) {
	l, path := newLog(t, &audit.Options{DeferredSync: 10 * time.Millisecond})
	var last *audit.Record
	for i := 1; i <= 20; i++ {
		last = record(i)
		if err := l.AppendDeferred(last); err != nil {
			t.Fatal(err)
		}
		if last.Seq != uint64(i) || last.Hash == "" {
			t.Fatalf("record %d: seq %d, hash %q", i, last.Seq, last.Hash)
		}
	}
	if n := len(lines(t, path)); n != 20 {
		t.Fatalf("%d lines in the file after 20 deferred appends, want 20", n)
	}
	if hash := waitCheckpoint(t, path, 20); hash != last.Hash {
		t.Fatalf("checkpoint hash %.12s, last record's %.12s", hash, last.Hash)
	}
	if rep, err := audit.Verify(path); err != nil || rep.Records != 20 || rep.Checkpoint != 20 || len(rep.Warnings) != 0 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestAppendDeferredWithDurable mixes deferred and durable appends from
// many goroutines, with rotations: every durable Append returns with the
// checkpoint at its record or later (covering the deferred records before
// it), seqs are unique, and the whole log verifies.
func TestAppendDeferredWithDurable(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 8 << 10, DeferredSync: time.Hour})
	const workers, each = 8, 40
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r := record(w*each + i)
				if i%4 != 3 {
					if err := l.AppendDeferred(r); err != nil {
						t.Error(err)
						return
					}
					continue
				}
				if err := l.Append(r); err != nil {
					t.Error(err)
					return
				}
				if seq, _, err := audit.ReadCheckpoint(path); err != nil || seq < r.Seq {
					t.Errorf("Append of seq %d returned with the checkpoint at %d (%v)", r.Seq, seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(path); err != nil || rep.Records != workers*each || rep.Checkpoint != workers*each {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestCloseFlushesDeferred: Close makes deferred records durable and
// checkpointed, so the next Open finds nothing past the checkpoint and
// writes no recovery record.
func TestCloseFlushesDeferred(t *testing.T) {
	l, path := newLog(t, &audit.Options{DeferredSync: time.Hour})
	appendN(t, l, 2)
	for i := 3; i <= 5; i++ {
		if err := l.AppendDeferred(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if seq, _, err := audit.ReadCheckpoint(path); err != nil || seq != 5 {
		t.Fatalf("checkpoint after Close = %d, %v; want 5", seq, err)
	}
	l2, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if seq, _ := l2.Head(); seq != 5 {
		t.Fatalf("head after reopening = %d, want 5 (no recovery record)", seq)
	}
}

// TestAppendDeferredCrash: records appended deferred and never synced
// (the process died before the bound) are kept by the next Open, which
// names them in a recovery record, and the log verifies.
func TestAppendDeferredCrash(t *testing.T) {
	l, path := newLog(t, &audit.Options{DeferredSync: time.Hour})
	appendN(t, l, 2)
	for i := 3; i <= 6; i++ {
		if err := l.AppendDeferred(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A crash: copy the files as the kernel holds them, without Close.
	crashed := copyAuditFiles(t, path)
	l2, err := audit.Open(crashed, nil)
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := l2.Head()
	if err := l2.Close(); err != nil {
		t.Fatal(err)
	}
	if seq != 7 {
		t.Fatalf("head after reopening = %d, want 7 (records 3-6 kept, one recovery record)", seq)
	}
	if rep, err := audit.Verify(crashed); err != nil || rep.Records != 7 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestAppendDeferredSyncFailure: a failed fsync of the flusher is the
// log's error (Err), and while it stands a deferred append is durable
// before it returns, so it fails too.
func TestAppendDeferredSyncFailure(t *testing.T) {
	l, _ := newLog(t, &audit.Options{DeferredSync: time.Millisecond})
	appendN(t, l, 1)
	audit.WrapFile(l, func(f audit.File) audit.File { return syncFailing{f} })
	if err := l.AppendDeferred(record(2)); err != nil {
		t.Fatalf("deferred append = %v; its sync comes later", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for l.Err() == nil {
		if time.Now().After(deadline) {
			t.Fatal("Err() stayed nil after the flusher's sync failed")
		}
		time.Sleep(time.Millisecond)
	}
	if err := l.AppendDeferred(record(3)); err == nil {
		t.Fatal("deferred append while the log fails succeeded")
	}
	if l.Err() == nil {
		t.Fatal("Err() cleared by a deferred append whose sync failed")
	}
}

// TestAppendDeferredClosed: after Close a deferred append fails.
func TestAppendDeferredClosed(t *testing.T) {
	l, _ := newLog(t, nil)
	l.Close()
	if err := l.AppendDeferred(record(1)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("AppendDeferred after Close = %v", err)
	}
}

// copyAuditFiles copies the log at path, its key and its checkpoint to a
// fresh directory, as a crash would leave them, and returns the copy's
// path.
func copyAuditFiles(t testing.TB, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "audit.log")
	for _, suffix := range []string{"", ".key", ".checkpoint"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
