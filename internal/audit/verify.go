package audit

import (
	"errors"
	"fmt"
	"strings"
)

// Problem is one place where the log is not what depotfs wrote.
type Problem struct {
	File string // the log file
	Line int    // 1-based line in File; 0 for a problem of the whole log
	Seq  uint64 // the record's seq, when it could be read
	What string
}

func (p Problem) String() string {
	where := p.File
	if p.Line != 0 {
		where = fmt.Sprintf("%s line %d", p.File, p.Line)
	}
	if p.Seq != 0 {
		where = fmt.Sprintf("record %d (%s)", p.Seq, where)
	}
	return where + ": " + p.What
}

// VerifyError lists the problems Verify found. It wraps ErrTampered.
type VerifyError struct {
	Problems []Problem
}

func (e *VerifyError) Error() string {
	msg := "audit log verification failed: " + e.Problems[0].String()
	if n := len(e.Problems); n > 1 {
		msg += fmt.Sprintf(" (and %d more problem(s))", n-1)
	}
	return msg
}

// Unwrap returns ErrTampered.
func (e *VerifyError) Unwrap() error { return ErrTampered }

// Report summarizes a log that Verify read.
type Report struct {
	Files      int
	Records    uint64
	First      uint64 // seq of the first record
	Last       uint64 // seq of the last record
	Checkpoint uint64 // seq the checkpoint records
	// Warnings are irregularities that are not tampering: an incomplete
	// last line beyond the checkpoint, left by a crash during a write.
	Warnings []string
}

// maxProblems bounds the problems one Verify reports.
const maxProblems = 100

// Verify checks the whole chain of the log at path across its rotated
// files, and its end against the checkpoint. It returns a *VerifyError
// naming every record (up to 100) that was edited, deleted, reordered or
// inserted, or a truncation of the tail; any other error means the log
// could not be read.
func Verify(path string) (Report, error) {
	var rep Report
	key, err := loadKey(path, false)
	if err != nil {
		return rep, err
	}
	cp, _, hasCP, err := readCheckpoint(path, key)
	var probs []Problem
	add := func(p Problem) {
		if len(probs) < maxProblems {
			probs = append(probs, p)
		}
	}
	switch {
	case errors.Is(err, ErrCheckpoint):
		add(Problem{File: checkpointPath(path), What: "the checkpoint has no slot with a valid MAC: it was altered, or the key changed"})
	case err != nil:
		return rep, err
	case !hasCP:
		add(Problem{File: checkpointPath(path), What: "the checkpoint is missing, so a truncation of the log cannot be ruled out"})
	}
	rep.Checkpoint = cp.Seq

	fl, err := files(path)
	if err != nil {
		return rep, err
	}
	rep.Files = len(fl)
	expect, prev := uint64(1), genesis
	var lastSeq uint64
	var torn *line
	cpSeen := cp.Seq == 0
	for fi, lf := range fl {
		firstInFile := true
		err := eachLineOf(lf, func(_ logFile, l line) error {
			if torn != nil {
				add(Problem{File: torn.file, Line: torn.num, What: "incomplete record in the middle of the log"})
				torn = nil
			}
			if !l.complete {
				lc := l
				torn = &lc
				return nil
			}
			r, intact, derr := decode(l.text)
			if derr != nil {
				add(Problem{File: l.file, Line: l.num, What: "not a valid record: " + strings.TrimPrefix(derr.Error(), ErrRecord.Error()+": ") + " (edited or inserted)"})
				return nil
			}
			rep.Records++
			if rep.First == 0 {
				rep.First = r.Seq
			}
			if firstInFile && lf.First != 0 && r.Seq != lf.First {
				add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("first record of a file named for record %d: records moved between files", lf.First)})
			}
			firstInFile = false
			if !intact {
				add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "modified: its content does not match its hash"})
			}
			switch {
			case r.Seq == expect && r.Prev != prev:
				add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("does not link to record %d before it: that record, or this one, was modified or replaced", r.Seq-1)})
			case r.Seq > expect:
				missing := fmt.Sprintf("record %d is", expect)
				if r.Seq-expect > 1 {
					missing = fmt.Sprintf("records %d..%d are", expect, r.Seq-1)
				}
				add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("follows record %d: %s missing here (deleted or moved)", expect-1, missing)})
			case r.Seq < expect:
				add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("follows record %d: out of order (moved or duplicated)", expect-1)})
			}
			if r.Seq == cp.Seq && cp.Seq != 0 {
				cpSeen = true
				if r.Hash != cp.Hash {
					add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "differs from the checkpoint: it, or records before it, were rewritten"})
				}
			}
			expect, prev, lastSeq = r.Seq+1, r.Hash, r.Seq
			return nil
		})
		if err != nil {
			return rep, err
		}
		if firstInFile && lf.First != 0 {
			add(Problem{File: lf.Path, What: "rotated file is empty: its records were deleted"})
		}
		if torn != nil && fi < len(fl)-1 {
			add(Problem{File: torn.file, Line: torn.num, What: "incomplete record at the end of a rotated file"})
			torn = nil
		}
	}
	rep.Last = lastSeq
	if torn != nil {
		if lastSeq >= cp.Seq {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s line %d: incomplete last record, left by a crash during a write (never acknowledged)", torn.file, torn.num))
		} else {
			add(Problem{File: torn.file, Line: torn.num, What: "incomplete record before the checkpoint's head: the log was cut"})
		}
	}
	if cp.Seq > lastSeq {
		add(Problem{File: path, What: fmt.Sprintf("truncated: the log ends at record %d but the checkpoint records %d: records %d..%d were cut off", lastSeq, cp.Seq, lastSeq+1, cp.Seq)})
	} else if !cpSeen {
		add(Problem{File: path, What: fmt.Sprintf("the checkpoint's record %d is not in the log", cp.Seq)})
	}
	if len(probs) > 0 {
		return rep, &VerifyError{Problems: probs}
	}
	return rep, nil
}
