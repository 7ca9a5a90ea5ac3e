package audit_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// forgedLine is a record that chains to head (seq, hash) with a plain
// SHA-256 hash, as anyone who can write the log but not read the key can
// make it; keyed says whether it claims to be a version 2 record.
func forgedLine(seq uint64, prev string, keyed bool) []byte {
	v := ""
	if keyed {
		v = `"v":2,`
	}
	body := fmt.Sprintf(`{"seq":%d,"time":"2026-03-01T12:00:00Z","event":"call","tool":"guide_cache_file","decision":"allow","duration_ms":1,%s"prev":"%s"}`, seq, v, prev)
	return []byte(audit.HashLine(body) + "\n")
}

func appendRaw(t testing.TB, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// TestForgedRecordRefused: a record appended after the
// checkpoint with seq, prev and hash recomputed is refused by Verify and
// by Open, which names it.
func TestForgedRecordRefused(t *testing.T) {
	for _, keyed := range []bool{true, false} {
		t.Run(fmt.Sprintf("claims keyed=%v", keyed), func(t *testing.T) {
			l, path := newLog(t, nil)
			appendN(t, l, 3)
			seq, head := l.Head()
			l.Close()
			appendRaw(t, path, forgedLine(seq+1, head, keyed))
			_, err := audit.Verify(path)
			var ve *audit.VerifyError
			if !errors.As(err, &ve) || ve.Problems[0].Seq != 4 || !strings.Contains(ve.Problems[0].What, "forged") {
				t.Fatalf("Verify = %v; want record 4 named as forged", err)
			}
			l2, err := audit.Open(path, nil)
			if err == nil {
				l2.Close()
				t.Fatal("Open adopted a forged record")
			}
			if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), "record 4 ") {
				t.Fatalf("Open = %v; want ErrTampered naming record 4", err)
			}
		})
	}
}

// TestCrashTail: records written under the key whose checkpoint never
// was (a crash between the two) are kept, reported by Verify, and named by
// a recovery record when the log is continued.
func TestCrashTail(t *testing.T) {
	l, path := newLog(t, nil)
	appendN(t, l, 3)
	old, err := os.ReadFile(path + ".checkpoint")
	if err != nil {
		t.Fatal(err)
	}
	for i := 4; i <= 5; i++ {
		if err := l.Append(record(i)); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	if err := os.WriteFile(path+".checkpoint", old, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(path)
	if err != nil || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "records 4..5 follow the checkpoint (record 3)") {
		t.Fatalf("Verify = %+v, %v; want a warning naming records 4..5", rep, err)
	}
	l2, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	var last audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { last = r; return nil }); err != nil {
		t.Fatal(err)
	}
	if last.Seq != 6 || last.Event != audit.EventRecovery || !strings.Contains(last.Reason, "records 4..5") {
		t.Fatalf("last record %+v; want a recovery record naming records 4..5", last)
	}
	rep, err = audit.Verify(path)
	if err != nil || rep.Checkpoint != 6 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "record 6: serve continued") {
		t.Fatalf("Verify after recovery = %+v, %v", rep, err)
	}
}

// TestUnkeyedLogMigrates: a log of version 1 records (plain SHA-256, as
// older depotfs wrote) is continued with keyed records; unkeyed records
// past its checkpoint are reported as unverified, never adopted silently.
func TestUnkeyedLogMigrates(t *testing.T) {
	path := t.TempDir() + "/audit.log"
	var buf bytes.Buffer
	prev := strings.Repeat("0", 64)
	var hashes []string
	for seq := uint64(1); seq <= 4; seq++ {
		line := forgedLine(seq, prev, false)
		buf.Write(line)
		prev = string(line[len(line)-67 : len(line)-3])
		hashes = append(hashes, prev)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := audit.WriteCheckpoint(path, 3, hashes[2]); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(path)
	if err != nil || rep.Unkeyed != 4 || len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "record 4 follows the signed checkpoint (record 3) and are unkeyed") {
		t.Fatalf("Verify of an unkeyed log = %+v, %v", rep, err)
	}
	l, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Append(record(9)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	rep, err = audit.Verify(path)
	if err != nil || rep.Records != 6 || rep.Unkeyed != 4 {
		t.Fatalf("Verify after migration = %+v, %v", rep, err)
	}
	// An unkeyed record after keyed ones is a forgery.
	seq, head := uint64(6), ""
	audit.Scan(path, func(r audit.Record) error { head = r.Hash; return nil })
	appendRaw(t, path, forgedLine(seq+1, head, false))
	if _, err := audit.Verify(path); err == nil || !strings.Contains(err.Error(), "record 7 ") {
		t.Fatalf("Verify with an unkeyed record after keyed ones = %v", err)
	}
}

// TestOpenVerifiesMiddle: Open refuses a log edited in
// its middle, in the current file or in a sealed rotated file, naming the
// record, and reads sealed files it verified before only when they changed.
func TestOpenVerifiesMiddle(t *testing.T) {
	opts := &audit.Options{MaxSize: 1024}
	l, path := newLog(t, opts)
	appendN(t, l, 30)
	l.Close()
	rotated := rotatedFiles(t, path)
	for _, tt := range []struct {
		name string
		file func() string
		seq  string
	}{
		{"current file", func() string { return path }, ""},
		{"sealed rotated file", func() string { return rotated[1] }, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := tt.file()
			orig, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.WriteFile(file, orig, 0o600) })
			ls := lines(t, file)
			if len(ls) < 2 {
				t.Fatalf("%s has %d lines", file, len(ls))
			}
			seq := string(ls[0][len(`{"seq":`):bytes.IndexByte(ls[0], ',')])
			edited := bytes.Replace(ls[0], []byte(`"/p/`), []byte(`"/q/`), 1)
			ls[0] = edited
			writeLines(t, file, ls)
			l2, err := audit.Open(path, opts)
			if err == nil {
				l2.Close()
				t.Fatal("Open accepted a log edited in the middle")
			}
			if !errors.Is(err, audit.ErrTampered) || !strings.Contains(err.Error(), "record "+seq+" ") {
				t.Fatalf("Open = %v; want ErrTampered naming record %s", err, seq)
			}
		})
	}
	// Untouched again (same bytes, but a new ctime): verified and resealed.
	l3, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	l3.Close()
}

// TestRetention: rotated files beyond RetainSize are
// deleted, and what is kept still verifies from its signed base; deleting
// a kept file is still detected.
func TestRetention(t *testing.T) {
	opts := &audit.Options{MaxSize: 1024, RetainSize: 3000}
	l, path := newLog(t, opts)
	appendN(t, l, 80)
	var total int64
	rotated := rotatedFiles(t, path)
	for _, n := range rotated {
		fi, err := os.Stat(n)
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > 3000 || len(rotated) < 2 {
		t.Fatalf("%d rotated files of %d bytes; want at most 3000 bytes", len(rotated), total)
	}
	rep, err := audit.Verify(path)
	if err != nil || rep.First <= 1 || rep.Last != 80 {
		t.Fatalf("Verify after retention = %+v, %v", rep, err)
	}
	l.Close()
	l2, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if err := os.Remove(rotated[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(path); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Verify without the oldest kept file = %v", err)
	}
	if l3, err := audit.Open(path, opts); !errors.Is(err, audit.ErrTampered) {
		if l3 != nil {
			l3.Close()
		}
		t.Fatalf("Open without the oldest kept file = %v", err)
	}
}

// TestRetentionByAge deletes rotated files older than RetainAge at Open.
func TestRetentionByAge(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 1024})
	appendN(t, l, 30)
	l.Close()
	old := time.Now().Add(-48 * time.Hour)
	rotated := rotatedFiles(t, path)
	for _, n := range rotated[:2] {
		if err := os.Chtimes(n, old, old); err != nil {
			t.Fatal(err)
		}
	}
	l2, err := audit.Open(path, &audit.Options{MaxSize: 1024, RetainAge: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l2.Close()
	if got := rotatedFiles(t, path); len(got) != len(rotated)-2 {
		t.Fatalf("%d rotated files left of %d; want the 2 old ones deleted", len(got), len(rotated))
	}
	if _, err := audit.Verify(path); err != nil {
		t.Fatal(err)
	}
}

// TestLock: a second writer is refused, naming the
// process holding the log.
func TestLock(t *testing.T) {
	l, path := newLog(t, nil)
	_, err := audit.Open(path, nil)
	if !errors.Is(err, audit.ErrLocked) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second Open = %v; want ErrLocked naming pid %d", err, os.Getpid())
	}
	l.Close()
	l2, err := audit.Open(path, nil)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	l2.Close()
}

// slowSync counts syncs and makes each take a while, as a disk does.
type slowSync struct {
	audit.File
	mu    sync.Mutex
	syncs int
}

func (s *slowSync) Sync() error {
	s.mu.Lock()
	s.syncs++
	s.mu.Unlock()
	time.Sleep(5 * time.Millisecond)
	return s.File.Sync()
}

// TestGroupCommit: concurrent appends share fsyncs; each returns only
// once a sync that covers its record has finished.
func TestGroupCommit(t *testing.T) {
	l, path := newLog(t, nil)
	ss := &slowSync{}
	audit.WrapFile(l, func(f audit.File) audit.File { ss.File = f; return ss })
	const n = 64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Append(record(i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ss.syncs >= n/2 {
		t.Errorf("%d appends took %d syncs; want them shared", n, ss.syncs)
	}
	if rep, err := audit.Verify(path); err != nil || rep.Checkpoint != n {
		t.Fatalf("Verify = %+v, %v; want the checkpoint at %d", rep, err, n)
	}
}

// TestRecordBounded: a 32 MiB tool
// name costs a few hundred bytes of log, with its length and hash.
func TestRecordBounded(t *testing.T) {
	l, path := newLog(t, nil)
	r := record(1)
	r.Tool = strings.Repeat("x", 32<<20)
	r.Reason = "no such tool " + r.Tool
	r.Paths = []string{"/" + strings.Repeat("p", 4000)}
	if err := l.Append(r); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 4096 {
		t.Fatalf("a record with a 32 MiB tool name takes %d bytes", fi.Size())
	}
	recs := []audit.Record{}
	audit.Scan(path, func(r audit.Record) error { recs = append(recs, r); return nil })
	if !strings.Contains(recs[0].Tool, "[33554432 bytes, sha256:") {
		t.Fatalf("clipped tool %q lacks its length and hash", recs[0].Tool)
	}
	if _, err := audit.Verify(path); err != nil {
		t.Fatal(err)
	}
}
