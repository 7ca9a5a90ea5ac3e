package nats

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// txn is the transaction the write rules run in: its changes overlay the
// host's state, and revisions and new inodes are assigned when messages
// turns them into the batch.
var (
	_ rules.Txn       = (*txn)(nil)
	_ rules.Committer = committer{}
)

// writes are Remove, Copy, Move, Declare, CreateSnapshot and
// DeleteSnapshot: the write rules alone, over committer (see rules.Writes).
type writes = rules.Writes

// committer runs the write rules in the store's transactions; they
// upload no content.
type committer struct{ s *Store }

// Update runs fn in a transaction and commits it (see Store.update).
func (c committer) Update(ctx context.Context, fn func(rules.Txn) error) error {
	return c.s.update(ctx, func(t *txn) error { return fn(t) }, nil)
}

// Check fails as update would before running anything.
func (c committer) Check(ctx context.Context) error { return c.s.check(ctx) }

// get returns the entry at p as of the transaction, nil when absent.
func (t *txn) get(p string) *record {
	if p == depotpath.Root {
		return nil
	}
	if r, ok := t.entries[p]; ok {
		return r
	}
	return t.st.entries[p]
}

// Get is get without the path.
func (t *txn) Get(p string) (*entryrec.Record, error) { return t.get(p).rec(), nil }

// Put writes r at p; its revision (and a new entry's inode) is assigned
// by messages.
func (t *txn) Put(kind store.EventKind, p string, r entryrec.Record) (*entryrec.Record, error) {
	next := &record{Path: p, Record: r}
	if err := t.put(kind, next); err != nil {
		return nil, err
	}
	return &next.Record, nil
}

// Moved marks the change of p as a move from from (hdrMoved).
func (t *txn) Moved(p, from string) { t.moved[p] = from }

// Delete deletes the entry r at p.
func (t *txn) Delete(p string, r *entryrec.Record) error {
	if err := t.repin(r, nil); err != nil {
		return err
	}
	t.entries[p] = nil
	t.mark(p)
	delete(t.evicted, p)
	delete(t.moved, p)
	return nil
}

// HasChildren reports whether dir has an entry as of the transaction.
func (t *txn) HasChildren(dir string) (bool, error) {
	for c := range t.st.children[dir] {
		if t.get(c) != nil {
			return true, nil
		}
	}
	for p, r := range t.entries {
		if r != nil {
			if d, _ := depotpath.Split(p); d == dir {
				return true, nil
			}
		}
	}
	return false, nil
}

// Descendants returns the entries below dir as of the transaction,
// deepest first: the state's, as the transaction changed them, and those
// the transaction (an earlier call of its group) created.
func (t *txn) Descendants(dir string) ([]rules.Entry, error) {
	var out []rules.Entry
	seen := map[string]bool{}
	for _, r := range t.st.descendants(dir) {
		seen[r.Path] = true
		if cur := t.get(r.Path); cur != nil {
			out = append(out, rules.Entry{Path: cur.Path, Rec: cur.rec()})
		}
	}
	for p, r := range t.entries {
		if r != nil && !seen[p] && p != dir && depotpath.Within(p, dir) {
			out = append(out, rules.Entry{Path: p, Rec: r.rec()})
		}
	}
	rules.SortDeepestFirst(out)
	return out, nil
}

// Use records a use of content sum, applied to this host's order when
// the transaction has committed.
func (t *txn) Use(sum string) error {
	t.touched = append(t.touched, sum)
	return nil
}

// Stored is the size of the content referenced, as of the transaction.
func (t *txn) Stored() int64 { return t.stored }

// Now is the transaction's clock.
func (t *txn) Now() time.Time { return t.now }

// Limits are the store's size limits.
func (t *txn) Limits() check.Limits { return t.s.limits() }

// mark notes p as changed last, which orders its message in the batch.
func (t *txn) mark(p string) {
	if i := slices.Index(t.order, p); i >= 0 {
		t.order = slices.Delete(t.order, i, i+1)
	}
	t.order = append(t.order, p)
}

// put writes r at its path as a change of the given kind. r's revision is
// 0 until messages assigns the one its message gets: a later call in the
// same group must not see the revision r replaces (see entryrec.CheckRevision).
func (t *txn) put(kind store.EventKind, r *record) error {
	old := t.get(r.Path)
	if err := t.repin(old.rec(), r.rec()); err != nil {
		return err
	}
	r.Revision = 0
	t.entries[r.Path] = r
	t.mark(r.Path)
	if kind == store.EventEvicted {
		t.evicted[r.Path] = true
	} else {
		delete(t.evicted, r.Path)
	}
	delete(t.moved, r.Path)
	return nil
}

// repin moves a pinned reference from old's content to r's.
func (t *txn) repin(old, r *entryrec.Record) error {
	a, b := entryrec.PinnedSum(old), entryrec.PinnedSum(r)
	if a == b {
		return nil
	}
	if a != "" {
		bl := t.blob(a)
		if bl == nil || bl.Pins == 0 {
			return fmt.Errorf("corrupt store: blob %s has no pinned reference to drop", a)
		}
		bl.Pins--
		t.setBlob(a, bl)
	}
	if b != "" {
		bl := t.blob(b)
		if bl == nil {
			return fmt.Errorf("corrupt store: pinned content %s is missing", b)
		}
		bl.Pins++
		t.setBlob(b, bl)
	}
	return nil
}

// blob returns a copy of the blob record for sum, nil when absent.
func (t *txn) blob(sum string) *blobRecord {
	if b := t.blobs.get(sum, t.st.blobs); b != nil {
		c := *b
		return &c
	}
	return nil
}

// setBlob writes sum's blob record, keeping the stored size in step.
func (t *txn) setBlob(sum string, b *blobRecord) {
	old := t.blob(sum)
	if old != nil && old.Refs > 0 {
		t.stored -= old.Size
	}
	if b.Refs > 0 {
		t.stored += b.Size
	}
	t.blobs.set(sum, b)
}

// Ref takes a reference on content sum of the given size; content the
// store does not hold must have been offered inline or uploaded by this
// call (needContent otherwise: update uploads it and runs the call again,
// or, for a call that uploads nothing, fails).
func (t *txn) Ref(sum string, size int64) error {
	b := t.blob(sum)
	if data, ok := t.inline[sum]; b == nil && ok && int64(len(data)) == size {
		b = &blobRecord{Size: size, ChunkSize: max(size, 1), Gen: genInline}
	} else if b == nil {
		gen, ok := t.uploaded[sum]
		if !ok {
			return needContent{sum}
		}
		t.used[sum] = true
		b = &blobRecord{Size: size, ChunkSize: int64(t.s.chunkSize), Gen: gen}
	} else if b.Size != size {
		return fmt.Errorf("corrupt blob %s: size %d, content has %d", sum, b.Size, size)
	}
	b.Refs++
	t.setBlob(sum, b)
	return nil
}

// Unref drops a reference on content sum; content left without one is
// deleted after the commit (see messages).
func (t *txn) Unref(sum string) error {
	b := t.blob(sum)
	if b == nil || b.Refs == 0 {
		return fmt.Errorf("corrupt store: blob %s has no reference to drop", sum)
	}
	b.Refs--
	t.setBlob(sum, b)
	return nil
}
