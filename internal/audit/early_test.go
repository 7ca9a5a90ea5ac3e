package audit_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/audit"
)

// checkpointSeq returns the seq the checkpoint of the log at path names.
func checkpointSeq(t testing.TB, path string) uint64 {
	t.Helper()
	seq, _, err := audit.ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// reopenCrashed opens a copy of the log at path as a crash now would
// leave it, and checks that Open takes it, that Verify finds no problem,
// and that a recovery record names the records after the checkpoint
// exactly when there are some. It returns the copy's verification report.
func reopenCrashed(t testing.TB, path string) audit.Report {
	t.Helper()
	crashed := copyAuditFiles(t, path)
	cp := checkpointSeq(t, crashed)
	last := uint64(len(lines(t, crashed)))
	l, err := audit.Open(crashed, nil)
	if err != nil {
		t.Fatalf("Open after a crash (checkpoint %d, %d records): %v", cp, last, err)
	}
	head, _ := l.Head()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	switch {
	case cp < last && head != last+1:
		t.Errorf("records %d..%d follow the checkpoint, but Open wrote no recovery record (head %d)", cp+1, last, head)
	case cp == last && head != last:
		t.Errorf("nothing follows the checkpoint, but Open wrote a record (head %d, want %d)", head, last)
	}
	rep, err := audit.Verify(crashed)
	if err != nil {
		t.Fatalf("Verify after a crash (checkpoint %d, %d records): %v", cp, last, err)
	}
	return rep
}

// TestEarlyRecordHoldsCheckpoint: the checkpoint stops before an early
// record until it is confirmed, an Append after it waits for that, and a
// crash at each point leaves a log that Open continues and Verify passes.
func TestEarlyRecordHoldsCheckpoint(t *testing.T) {
	l, path := newLog(t, nil)
	appendN(t, l, 2)
	early := record(3)
	if err := l.AppendEarly(early); err != nil {
		t.Fatal(err)
	}
	if early.Seq != 3 {
		t.Fatalf("early record seq %d, want 3", early.Seq)
	}
	rep := reopenCrashed(t, path)
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "record 3 follows the checkpoint (record 2)") {
		t.Errorf("crash after the early write: warnings %q", rep.Warnings)
	}

	after := make(chan error, 1)
	go func() { after <- l.Append(record(4)) }()
	waitLines(t, path, 4)
	if got := checkpointSeq(t, path); got != 2 {
		t.Fatalf("checkpoint at %d while record 3 is early, want 2", got)
	}
	select {
	case err := <-after:
		t.Fatalf("Append after an early record returned (%v) before it was confirmed", err)
	default:
	}
	reopenCrashed(t, path)

	if err := l.Confirm(early, early); err != nil {
		t.Fatal(err)
	}
	if got := checkpointSeq(t, path); got < 3 {
		t.Fatalf("checkpoint at %d after Confirm, want 3 or more", got)
	}
	if err := <-after; err != nil {
		t.Fatal(err)
	}
	if got := checkpointSeq(t, path); got != 4 {
		t.Fatalf("checkpoint at %d after the Append, want 4", got)
	}
	if rep := reopenCrashed(t, path); len(rep.Warnings) != 0 {
		t.Errorf("crash after everything settled: warnings %q", rep.Warnings)
	}
}

// TestEarlyRecordAmended: a failed commit's early record is followed by
// the record that says so, and no checkpoint covers the first without the
// second.
func TestEarlyRecordAmended(t *testing.T) {
	l, path := newLog(t, nil)
	appendN(t, l, 1)
	early := record(2)
	early.Status = "created"
	if err := l.AppendEarly(early); err != nil {
		t.Fatal(err)
	}
	failed := record(2)
	failed.Error = "system"
	if err := l.Amend(early, failed); err != nil {
		t.Fatal(err)
	}
	if failed.Seq != 3 || failed.Amends != 2 {
		t.Fatalf("amending record: seq %d amends %d, want 3 and 2", failed.Seq, failed.Amends)
	}
	if got := checkpointSeq(t, path); got != 3 {
		t.Fatalf("checkpoint at %d after Amend, want 3", got)
	}
	if rep := reopenCrashed(t, path); len(rep.Warnings) != 0 {
		t.Errorf("warnings %q", rep.Warnings)
	}
	var got []audit.Record
	if err := audit.Scan(path, func(r audit.Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[1].Status != "created" || got[2].Amends != 2 || got[2].Error != "system" {
		t.Fatalf("records %+v", got)
	}
}

// TestEarlyRecordsConcurrent: writers that each append early, then
// confirm or amend, with plain appends between them, leave a checkpoint
// at the last record and a log that verifies; the checkpoint read at any
// moment never covers an early record that was not settled.
func TestEarlyRecordsConcurrent(t *testing.T) {
	l, path := newLog(t, &audit.Options{MaxSize: 4 << 10})
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if w%4 == 3 {
					if err := l.Append(record(i)); err != nil {
						t.Error(err)
					}
					continue
				}
				early := record(i)
				if err := l.AppendEarly(early); err != nil {
					t.Error(err)
					return
				}
				// A checkpoint read now must stop before this record.
				if cp, _, err := audit.ReadCheckpoint(path); err == nil && cp >= early.Seq {
					t.Errorf("checkpoint %d covers early record %d before it was settled", cp, early.Seq)
				}
				var err error
				if i%5 == 0 {
					r := record(i)
					r.Error = "system"
					err = l.Amend(early, r)
				} else {
					if i%3 == 1 {
						l.Committed(early) // as the store does for a group
					}
					err = l.Confirm(early, early)
				}
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seq, _ := l.Head()
	// 2 writers of plain records, 6 of early ones, a fifth of them amended.
	if want := uint64(2*each + 6*each + 6*each/5); seq != want {
		t.Fatalf("head %d, want %d", seq, want)
	}
	if got := checkpointSeq(t, path); got != seq {
		t.Fatalf("checkpoint %d, head %d", got, seq)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if rep, err := audit.Verify(path); err != nil || len(rep.Warnings) != 0 || rep.Records != seq {
		t.Fatalf("Verify = %+v, %v", rep, err)
	}
}

// waitLines polls until the log at path holds n lines.
func waitLines(t testing.TB, path string, n int) {
	t.Helper()
	for range 30000 {
		if len(lines(t, path)) >= n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the log never reached %d lines", n)
}
