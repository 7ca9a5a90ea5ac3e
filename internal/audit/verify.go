package audit

import (
	"cmp"
	"errors"
	"fmt"
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
	More     int // problems found beyond those listed
}

func (e *VerifyError) Error() string {
	msg := "audit log verification failed: " + e.Problems[0].String()
	if n := len(e.Problems) - 1 + e.More; n > 0 {
		msg += fmt.Sprintf(" (and %d more problem(s))", n)
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
	// Unkeyed counts version 1 records (from before keyed chaining).
	Unkeyed uint64
	// Warnings are irregularities that are not tampering: an incomplete
	// last line left by a crash during a write, records written after the
	// last checkpoint, unkeyed records past it, and the recovery records
	// in which serve noted such records when it continued the log.
	Warnings []string
}

// Verify checks the whole chain of the log at path across its rotated
// files (from its base, when retention deleted older files), every
// record's hash under the key, and the end against the checkpoint. It
// returns a *VerifyError naming every record (up to 100) that was edited,
// forged, deleted, reordered or inserted, or a truncation of the tail; any
// other error means the log could not be read.
func Verify(path string) (Report, error) {
	var rep Report
	key, err := loadKey(path, false)
	if err != nil {
		return rep, err
	}
	cp, _, hasCP, cperr := readCheckpoint(path, key)
	b, err := readBase(path, key)
	if err != nil {
		return rep, err
	}
	c := newChain(key, b, cp)
	switch {
	case errors.Is(cperr, ErrCheckpoint):
		c.add(Problem{File: checkpointPath(path), What: "the checkpoint has no slot with a valid MAC: it was altered, or the key changed"})
	case cperr != nil:
		return rep, cperr
	case !hasCP:
		c.add(Problem{File: checkpointPath(path), What: "the checkpoint is missing, so a truncation of the log cannot be ruled out"})
	}
	rep.Checkpoint = cp.Seq

	fl, err := files(path)
	if err != nil {
		return rep, err
	}
	var torn *line
	for fi, lf := range fl {
		if lf.First != 0 && lf.First < b.First {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: before the log's base (record %d): left by retention, not checked", lf.Path, b.First))
			continue
		}
		rep.Files++
		firstInFile := true
		err := eachLineOf(lf, func(l line) error {
			if torn != nil {
				c.add(Problem{File: torn.file, Line: torn.num, What: "incomplete record in the middle of the log"})
				torn = nil
			}
			if !l.complete {
				torn = &l
				return nil
			}
			r, ok := c.next(l)
			if !ok {
				return nil
			}
			rep.Records++
			rep.First = cmp.Or(rep.First, r.Seq)
			if r.V == versionSHA256 {
				rep.Unkeyed++
			}
			if r.Event == EventRecovery {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("record %d: serve continued the log after a recovery: %s", r.Seq, r.Reason))
			}
			if firstInFile && lf.First != 0 && r.Seq != lf.First {
				c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("first record of a file named for record %d: records moved between files", lf.First)})
			}
			firstInFile = false
			rep.Last = r.Seq
			return nil
		})
		if err != nil {
			return rep, err
		}
		if firstInFile && lf.First != 0 {
			c.add(Problem{File: lf.Path, What: "rotated file is empty: its records were deleted"})
		}
		if torn != nil && fi < len(fl)-1 {
			c.add(Problem{File: torn.file, Line: torn.num, What: "incomplete record at the end of a rotated file"})
			torn = nil
		}
	}
	if torn != nil {
		if rep.Last >= cp.Seq {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s line %d: incomplete last record, left by a crash during a write (never acknowledged)", torn.file, torn.num))
		} else {
			c.add(Problem{File: torn.file, Line: torn.num, What: "incomplete record before the checkpoint's head: the log was cut"})
		}
	}
	c.end(path)
	if c.tail.from != 0 {
		rep.Warnings = append(rep.Warnings, c.tail.describe(cp.Seq))
	}
	return rep, c.err()
}
