package audit

import (
	"cmp"
	"fmt"
	"strings"
)

// chain checks records in chain order, as Verify and Open read them: each
// record must decode, match its hash under the key, follow the record
// before it (seq and prev) and, once a keyed record was seen, be keyed
// too. It collects the problems it finds.
type chain struct {
	key    []byte
	expect uint64 // seq of the next record
	prev   string // hash of the record before it
	keyed  bool   // a keyed record was seen: unkeyed ones may not follow
	probs  []Problem
	more   int // problems beyond maxProblems

	// cp is the checkpoint's head, cpSeen whether its record was read.
	cp     checkpoint
	cpSeen bool
	// tail describes the records read after the checkpoint's.
	tail tailRange
}

// tailRange is the run of records after the checkpoint's record: written,
// but their checkpoint never was (or they were added by someone else).
type tailRange struct {
	from, to uint64 // seqs; from 0 when there is none
	unkeyed  bool   // some of them are version 1 records: unverifiable
}

// maxProblems bounds the problems one check reports.
const maxProblems = 100

func newChain(key []byte, b base, cp checkpoint) *chain {
	return &chain{key: key, expect: b.First, prev: b.Prev, cp: cp, cpSeen: cp.Seq < b.First}
}

func (c *chain) add(p Problem) {
	if len(c.probs) < maxProblems {
		c.probs = append(c.probs, p)
	} else {
		c.more++
	}
}

// next checks one complete line; it returns the record and true when the
// line could be decoded.
func (c *chain) next(l line) (Record, bool) {
	r, intact, err := decode(l.text, c.key)
	if err != nil {
		c.add(Problem{File: l.file, Line: l.num, What: "not a valid record: " + strings.TrimPrefix(err.Error(), ErrRecord.Error()+": ") + " (edited or inserted)"})
		return r, false
	}
	switch {
	case !intact && r.V == versionKeyed:
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "its MAC does not match its content: modified, or written without the key (forged)"})
	case !intact:
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "modified: its content does not match its hash"})
	case r.V == versionSHA256 && c.keyed:
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "an unkeyed (version 1) record after keyed ones: written without the key (forged)"})
	}
	c.keyed = c.keyed || r.V == versionKeyed
	switch {
	case r.Seq == c.expect && r.Prev != c.prev:
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("does not link to record %d before it: that record, or this one, was modified or replaced", r.Seq-1)})
	case r.Seq > c.expect:
		missing := fmt.Sprintf("record %d is", c.expect)
		if r.Seq-c.expect > 1 {
			missing = fmt.Sprintf("records %d..%d are", c.expect, r.Seq-1)
		}
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("follows record %d: %s missing here (deleted or moved)", c.expect-1, missing)})
	case r.Seq < c.expect:
		c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: fmt.Sprintf("follows record %d: out of order (moved or duplicated)", c.expect-1)})
	}
	switch {
	case r.Seq == c.cp.Seq && c.cp.Seq != 0:
		c.cpSeen = true
		if r.Hash != c.cp.Hash {
			c.add(Problem{File: l.file, Line: l.num, Seq: r.Seq, What: "differs from the checkpoint: it, or records before it, were rewritten"})
		}
	case r.Seq > c.cp.Seq:
		c.tail.from = cmp.Or(c.tail.from, r.Seq)
		c.tail.to = r.Seq
		c.tail.unkeyed = c.tail.unkeyed || r.V == versionSHA256
	}
	c.expect, c.prev = r.Seq+1, r.Hash
	return r, true
}

// skip moves the chain over a sealed file without reading it.
func (c *chain) skip(s seal) {
	if s.First <= c.cp.Seq && c.cp.Seq <= s.Last {
		c.cpSeen = true
		if c.cp.Seq == s.Last && c.cp.Hash != s.Hash {
			c.add(Problem{File: s.file, Seq: s.Last, What: "differs from the checkpoint: it, or records before it, were rewritten"})
		}
	}
	if s.Last > c.cp.Seq && (c.cp.Seq+1 >= s.First || c.tail.from != 0) {
		// The checkpoint stopped before an early record not settled when
		// the file was rotated: the rest of it follows the checkpoint.
		// (A checkpoint before the base, which retention moved past it,
		// is no tail.)
		c.tail.from = cmp.Or(c.tail.from, max(s.First, c.cp.Seq+1))
		c.tail.to = s.Last
	}
	c.keyed = c.keyed || s.Keyed
	c.expect, c.prev = s.Last+1, s.Hash
}

// end checks the end of the log against the checkpoint; file is the
// current file, for the problem's place.
func (c *chain) end(file string) {
	last := c.expect - 1
	switch {
	case c.cp.Seq > last:
		c.add(Problem{File: file, What: fmt.Sprintf("truncated: the log ends at record %d but the checkpoint records %d: records %d..%d were cut off", last, c.cp.Seq, last+1, c.cp.Seq)})
	case !c.cpSeen:
		c.add(Problem{File: file, What: fmt.Sprintf("the checkpoint's record %d is not in the log", c.cp.Seq)})
	}
}

// err returns the problems as a *VerifyError, or nil.
func (c *chain) err() error {
	if len(c.probs) == 0 {
		return nil
	}
	return &VerifyError{Problems: c.probs, More: c.more}
}

// describe says what a tail after the checkpoint is, for a warning and a
// recovery record.
func (t tailRange) describe(cp uint64) string {
	which := fmt.Sprintf("record %d follows", t.from)
	if t.to > t.from {
		which = fmt.Sprintf("records %d..%d follow", t.from, t.to)
	}
	if t.unkeyed {
		return fmt.Sprintf("%s the signed checkpoint (record %d) and are unkeyed (version 1): unverified, they may have been added by anyone who could write the log", which, cp)
	}
	return fmt.Sprintf("%s the checkpoint (record %d): written under the key but never checkpointed, as a crash between a write and its checkpoint leaves them; the calls they record were not acknowledged, except allowed reads, which are answered before their record is durable, and a write's change may or may not be in the store, as its record is written while it commits", which, cp)
}
