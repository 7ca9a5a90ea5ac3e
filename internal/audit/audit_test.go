package audit_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newLog opens a log in a fresh directory.
func newLog(t testing.TB, opts *audit.Options) (*audit.Log, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, path
}

// record is a call record for test number i.
func record(i int) *audit.Record {
	return &audit.Record{
		Time: t0.Add(time.Duration(i) * time.Second), Event: audit.EventCall,
		Identity: fmt.Sprintf("http:agent%d", i%3), Tool: "guide_cache_file",
		Paths: []string{fmt.Sprintf("/p/%d", i)}, Decision: audit.Allow, DurationMS: 1.5,
	}
}

// appendN appends records 1..n.
func appendN(t testing.TB, l *audit.Log, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if err := l.Append(record(i)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

// lines returns the log file's lines (with newlines).
func lines(t testing.TB, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(b, []byte("\n"))[:bytes.Count(b, []byte("\n"))]
}

func writeLines(t testing.TB, path string, ls [][]byte) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Join(ls, nil), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAppendChain(t *testing.T) {
	l, path := newLog(t, nil)
	appendN(t, l, 5)
	var got []audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d records, want 5", len(got))
	}
	for i, r := range got {
		if r.Seq != uint64(i+1) || len(r.Hash) != 64 || !r.Time.Equal(t0.Add(time.Duration(i+1)*time.Second)) {
			t.Errorf("record %d: %+v", i, r)
		}
		if i > 0 && r.Prev != got[i-1].Hash {
			t.Errorf("record %d prev %s, want %s", r.Seq, r.Prev, got[i-1].Hash)
		}
	}
	if got[0].Prev != strings.Repeat("0", 64) {
		t.Errorf("first prev %q", got[0].Prev)
	}
	rep, err := audit.Verify(path)
	if err != nil || rep.Records != 5 || rep.Last != 5 || rep.Checkpoint != 5 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	for _, f := range []string{path, path + ".key", path + ".checkpoint"} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", f, err, fi.Mode())
		}
	}
}

// TestVerifyTampering edits the log in every way the issue names and
// checks that Verify fails naming the record.
func TestVerifyTampering(t *testing.T) {
	tests := []struct {
		name   string
		tamper func(t *testing.T, path string)
		want   []string // substrings of the error
	}{
		{"edit a field", func(t *testing.T, path string) {
			ls := lines(t, path)
			ls[2] = bytes.Replace(ls[2], []byte(`"decision":"allow"`), []byte(`"decision":"deny" `), 1)
			writeLines(t, path, ls)
		}, []string{"record 3 ", "line 3", "modified"}},
		{"edit and rehash", func(t *testing.T, path string) {
			ls := lines(t, path)
			r := rehash(t, ls[2], `/p/3`, `/p/X`)
			ls[2] = r
			writeLines(t, path, ls)
		}, []string{"record 4 ", "does not link to record 3"}},
		{"delete a record", func(t *testing.T, path string) {
			ls := lines(t, path)
			writeLines(t, path, append(ls[:2:2], ls[3:]...))
		}, []string{"record 4 ", "record 3 is missing"}},
		{"reorder two records", func(t *testing.T, path string) {
			ls := lines(t, path)
			ls[2], ls[3] = ls[3], ls[2]
			writeLines(t, path, ls)
		}, []string{"record 4 ", "record 3 ", "out of order"}},
		{"truncate the tail", func(t *testing.T, path string) {
			writeLines(t, path, lines(t, path)[:3])
		}, []string{"truncated", "ends at record 3", "records 4..5 were cut off"}},
		{"truncate everything", func(t *testing.T, path string) {
			writeLines(t, path, nil)
		}, []string{"truncated", "records 1..5"}},
		{"insert a record", func(t *testing.T, path string) {
			ls := lines(t, path)
			writeLines(t, path, append(ls[:2:2], append([][]byte{ls[1]}, ls[2:]...)...))
		}, []string{"record 2 ", "line 3", "out of order"}},
		{"garbage line", func(t *testing.T, path string) {
			ls := lines(t, path)
			ls[1] = []byte("{\"seq\":2}\n")
			writeLines(t, path, ls)
		}, []string{"line 2", "not a valid record"}},
		{"delete the checkpoint", func(t *testing.T, path string) {
			os.Remove(path + ".checkpoint")
		}, []string{"checkpoint is missing"}},
		{"forge the checkpoint", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path + ".checkpoint")
			os.WriteFile(path+".checkpoint", bytes.ReplaceAll(b, []byte(`"seq":`), []byte(`"seq":1`)), 0o600)
		}, []string{"no slot with a valid MAC"}},
		{"rewrite the tail consistently", func(t *testing.T, path string) {
			// Drop record 5 and rewrite record 4 with a new hash: the chain
			// is consistent, only the checkpoint knows.
			ls := lines(t, path)
			writeLines(t, path, append(ls[:3:3], rehash(t, ls[3], `/p/4`, `/p/Y`)))
		}, []string{"truncated", "records 5..5"}},
		{"rehash the last record", func(t *testing.T, path string) {
			ls := lines(t, path)
			ls[4] = rehash(t, ls[4], `/p/5`, `/p/Z`)
			writeLines(t, path, ls)
		}, []string{"record 5 ", "differs from the checkpoint"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, path := newLog(t, nil)
			appendN(t, l, 5)
			l.Close()
			if _, err := audit.Verify(path); err != nil {
				t.Fatalf("untouched log: %v", err)
			}
			tt.tamper(t, path)
			_, err := audit.Verify(path)
			var ve *audit.VerifyError
			if !errors.As(err, &ve) || !errors.Is(err, audit.ErrTampered) {
				t.Fatalf("Verify after tampering = %v; want a *VerifyError", err)
			}
			all := err.Error()
			for _, p := range ve.Problems {
				all += "\n" + p.String()
			}
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
		})
	}
}

// rehash replaces old with new in a record line and recomputes its hash,
// as an attacker who knows the format would.
func rehash(t *testing.T, line []byte, old, new string) []byte {
	t.Helper()
	s := strings.TrimSuffix(string(line), "\n")
	i := strings.LastIndex(s, `,"hash":"`)
	body := strings.Replace(s[:i]+"}", old, new, 1)
	return []byte(audit.HashLine(body) + "\n")
}

func TestRotation(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 1024})
	appendN(t, l, 30)
	rotated := rotatedFiles(t, path)
	if len(rotated) < 3 {
		t.Fatalf("rotated files %q; want several", rotated)
	}
	for _, n := range append(rotated, path) {
		if fi, err := os.Stat(n); err != nil || fi.Size() > 1024 {
			t.Errorf("%s: %v, size %d > 1024", n, err, fi.Size())
		}
	}
	rep, err := audit.Verify(path)
	if err != nil || rep.Records != 30 || rep.Files != len(rotated)+1 {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
	// The chain survives a reopen: the next record links to record 30.
	l.Close()
	l2, err := audit.Open(path, &audit.Options{MaxSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if seq, _ := l2.Head(); seq != 30 {
		t.Fatalf("reopened head %d, want 30", seq)
	}
	r := record(31)
	if err := l2.Append(r); err != nil || r.Seq != 31 {
		t.Fatalf("append after reopen: seq %d, %v", r.Seq, err)
	}
	if _, err := audit.Verify(path); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
	// Deleting a whole rotated file is detected.
	if err := os.Remove(rotated[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := audit.Verify(path); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("Verify without a rotated file = %v", err)
	}
}

// rotatedFiles lists the rotated files of the log at path, oldest first.
func rotatedFiles(t testing.TB, path string) []string {
	t.Helper()
	names, err := filepath.Glob(path + ".[0-9]*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if !strings.HasSuffix(n, ".seal") {
			out = append(out, n)
		}
	}
	return out
}

// TestOpenRefusesTamperedTail checks that depotfs will not extend a log
// whose end was cut or altered.
func TestOpenRefusesTamperedTail(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tamper func(path string)
	}{
		{"truncated", func(path string) { writeLines(t, path, lines(t, path)[:2]) }},
		{"last record edited", func(path string) {
			ls := lines(t, path)
			ls[3] = bytes.Replace(ls[3], []byte("/p/4"), []byte("/p/5"), 1)
			writeLines(t, path, ls)
		}},
		{"log deleted", func(path string) { os.Remove(path) }},
		{"checkpoint deleted", func(path string) { os.Remove(path + ".checkpoint") }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, path := newLog(t, nil)
			appendN(t, l, 4)
			l.Close()
			tt.tamper(path)
			if l, err := audit.Open(path, nil); !errors.Is(err, audit.ErrTampered) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("Open = %v, want ErrTampered", err)
			}
		})
	}
}

func TestOpenRepairsTornTail(t *testing.T) {
	l, path := newLog(t, nil)
	appendN(t, l, 3)
	l.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte(`{"seq":4,"time":"2026-`))
	f.Close()
	rep, err := audit.Verify(path)
	if err != nil || len(rep.Warnings) != 1 {
		t.Fatalf("Verify with a torn tail = %+v, %v; want one warning", rep, err)
	}
	l2, err := audit.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if err := l2.Append(record(4)); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(path); err != nil || rep.Records != 4 || len(rep.Warnings) != 0 {
		t.Fatalf("after repair: %+v, %v", rep, err)
	}
}

// failing fails writes or syncs while its switch is on.
type failing struct {
	audit.File
	mu      sync.Mutex
	fail    bool
	partial bool // write half the bytes before failing
}

func (f *failing) set(fail bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = fail
}

func (f *failing) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		if f.partial {
			n, _ := f.File.Write(p[:len(p)/2])
			return n, errors.New("no space left on device")
		}
		return 0, errors.New("no space left on device")
	}
	return f.File.Write(p)
}

// TestWriteFailure checks that a failed write is reported, sticks in Err
// until a later write succeeds, and leaves a log that still verifies (a
// partial line is cut off before the next record).
func TestWriteFailure(t *testing.T) {
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) {
			l, path := newLog(t, nil)
			appendN(t, l, 2)
			fl := &failing{partial: partial}
			audit.WrapFile(l, func(f audit.File) audit.File { fl.File = f; return fl })
			fl.set(true)
			if err := l.Append(record(3)); err == nil {
				t.Fatal("append to a failing file succeeded")
			}
			if l.Err() == nil {
				t.Fatal("Err() is nil after a failed write")
			}
			if err := l.Append(record(3)); err == nil {
				t.Fatal("second append to a failing file succeeded")
			}
			fl.set(false)
			r := record(3)
			if err := l.Append(r); err != nil || r.Seq != 3 {
				t.Fatalf("append after recovery: seq %d, %v", r.Seq, err)
			}
			if l.Err() != nil {
				t.Fatalf("Err() = %v after a successful append", l.Err())
			}
			if rep, err := audit.Verify(path); err != nil || rep.Records != 3 {
				t.Fatalf("Verify = %+v, %v", rep, err)
			}
		})
	}
}

type syncFailing struct{ audit.File }

func (syncFailing) Sync() error { return errors.New("input/output error") }

func TestSyncFailure(t *testing.T) {
	l, _ := newLog(t, nil)
	appendN(t, l, 1)
	audit.WrapFile(l, func(f audit.File) audit.File { return syncFailing{f} })
	if err := l.Append(record(2)); err == nil || l.Err() == nil {
		t.Fatalf("append with a failing fsync = %v, Err %v; want errors", err, l.Err())
	}
}

func TestConcurrentAppend(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 8 << 10})
	const workers, each = 8, 25
	var wg sync.WaitGroup
	seqs := make(chan uint64, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := record(w*each + i)
				if err := l.Append(r); err != nil {
					t.Error(err)
					return
				}
				seqs <- r.Seq
			}
		}()
	}
	wg.Wait()
	close(seqs)
	seen := map[uint64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d given twice", s)
		}
		seen[s] = true
	}
	if rep, err := audit.Verify(path); err != nil || rep.Records != workers*each {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// TestCheckpointCoversAcknowledged: while appends run concurrently, with
// rotations, every Append returns only once the checkpoint on disk names
// its record or a later one, and the checkpoint only ever names a record
// that was appended (its seq and hash), so a crash at any moment leaves no
// acknowledged record past the checkpoint.
func TestCheckpointCoversAcknowledged(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 8 << 10})
	const workers, each = 8, 40
	var mu sync.Mutex
	hashes := map[uint64]string{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				r := record(w*each + i)
				if err := l.Append(r); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				hashes[r.Seq] = r.Hash
				mu.Unlock()
				seq, hash, err := audit.ReadCheckpoint(path)
				if err != nil {
					t.Error(err)
					return
				}
				if seq < r.Seq {
					t.Errorf("Append of seq %d returned with the checkpoint at %d", r.Seq, seq)
					return
				}
				mu.Lock()
				want, known := hashes[seq]
				mu.Unlock()
				if known && want != hash {
					t.Errorf("checkpoint names seq %d with hash %.12s, the record's is %.12s", seq, hash, want)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seq, hash, err := audit.ReadCheckpoint(path)
	if err != nil || seq != workers*each || hash != hashes[seq] {
		t.Fatalf("final checkpoint = %d %.12s, %v; want %d %.12s", seq, hash, err, workers*each, hashes[workers*each])
	}
	if rep, err := audit.Verify(path); err != nil || rep.Records != workers*each {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

func TestClosed(t *testing.T) {
	l, _ := newLog(t, nil)
	l.Close()
	if err := l.Append(record(1)); !errors.Is(err, audit.ErrClosed) {
		t.Errorf("Append after Close = %v", err)
	}
}

func TestFilter(t *testing.T) {
	r := audit.Record{Time: t0, Event: audit.EventCall, Identity: "http:depotfs://x/agent/a", Tool: "guide_cache_file",
		Paths: []string{"/projects/a/x"}, Decision: audit.Deny}
	tests := []struct {
		f    audit.Filter
		want bool
	}{
		{audit.Filter{}, true},
		{audit.Filter{Identity: "http:depotfs://x/agent/a"}, true},
		{audit.Filter{Identity: "depotfs://x/agent/a"}, true},
		{audit.Filter{Identity: "depotfs://x/agent"}, false},
		{audit.Filter{Tool: "guide_read_file"}, false},
		{audit.Filter{Path: "/projects/a"}, true},
		{audit.Filter{Path: "/projects/ab"}, false},
		{audit.Filter{Path: "/"}, true},
		{audit.Filter{Decision: audit.Deny}, true},
		{audit.Filter{Decision: audit.Allow}, false},
		{audit.Filter{Event: audit.EventAuth}, false},
		{audit.Filter{Since: t0}, true},
		{audit.Filter{Since: t0.Add(time.Nanosecond)}, false},
		{audit.Filter{Until: t0}, false},
		{audit.Filter{Until: t0.Add(time.Second)}, true},
	}
	for _, tt := range tests {
		if got := tt.f.Match(r); got != tt.want {
			t.Errorf("%+v.Match = %v, want %v", tt.f, got, tt.want)
		}
	}
}
