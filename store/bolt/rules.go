package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// wtx is the transaction the write rules run in; a write that offers
// content wraps it (withContent).
var (
	_ rules.Txn       = (*wtx)(nil)
	_ rules.Txn       = withContent{}
	_ rules.Committer = committer{}
)

// writes are Remove, Copy, Move, Declare, CreateSnapshot and
// DeleteSnapshot: the write rules alone, over committer (see rules.Writes).
type writes = rules.Writes

// committer runs the write rules in the store's transactions.
type committer struct{ s *Store }

// Update runs fn in a write transaction (see Store.update).
func (c committer) Update(ctx context.Context, fn func(rules.Txn) error) error {
	return dbErr(c.s.update(ctx, func(w *wtx) error { return fn(w) }))
}

// Check fails as update would before running anything.
func (c committer) Check(ctx context.Context) error { return c.s.check(ctx) }

// Get reads the entry at p from the tree bucket; nil when absent.
func (w *wtx) Get(p string) (*record, error) { return getEntry(w.tree, p, w.s.sealer) }

// Put writes r at p as a change of the given kind, at the next revision;
// a new entry (Ino 0) gets the next inode number.
func (w *wtx) Put(kind store.EventKind, p string, r record) (*record, error) {
	old, err := getEntry(w.tree, p, w.s.sealer)
	if err != nil {
		return nil, err
	}
	if r.Ino == 0 {
		w.ino++
		r.Ino = w.ino
	}
	if err := w.index(p, old, &r); err != nil {
		return nil, err
	}
	w.rev++
	r.Revision = w.rev
	v, err := encodeRecord(&r, w.s.sealer)
	if err != nil {
		return nil, err
	}
	if err := w.tree.Put(treeKey(p), v); err != nil {
		return nil, err
	}
	w.events = append(w.events, store.Event{Kind: kind, Path: p, Revision: r.Revision, Entry: r.Entry(p)})
	return &r, nil
}

// Moved marks the event of the entry just Put at p as a move from from.
func (w *wtx) Moved(p, from string) {
	for i := len(w.events) - 1; i >= 0; i-- {
		if w.events[i].Path == p {
			w.events[i].From = from
			return
		}
	}
}

// Delete deletes the entry r at p, at the next revision.
func (w *wtx) Delete(p string, r *record) error {
	if err := w.index(p, r, nil); err != nil {
		return err
	}
	if err := w.tree.Delete(treeKey(p)); err != nil {
		return err
	}
	w.rev++
	w.events = append(w.events, store.Event{Kind: store.EventRemoved, Path: p, Revision: w.rev, Entry: r.Entry(p)})
	return nil
}

// HasChildren reports whether dir has at least one entry.
func (w *wtx) HasChildren(dir string) (bool, error) { return hasChildren(w.tree, dir), nil }

// Descendants returns every entry below dir, deepest first.
func (w *wtx) Descendants(dir string) ([]rules.Entry, error) {
	var out []rules.Entry
	c := w.tree.Cursor()
	// Children have keys "dir\x00name"; deeper entries "dir/sub...\x00name".
	for _, prefix := range [][]byte{dirPrefix(dir), []byte(dir + "/")} {
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			r, err := decodeRecord(v, w.s.sealer)
			if err != nil {
				return nil, err
			}
			out = append(out, rules.Entry{Path: keyPath(k), Rec: r})
		}
	}
	rules.SortDeepestFirst(out)
	return out, nil
}

// Ref references content the store holds; content it does not hold is
// missing: only a write that offers content stores it (withContent).
func (w *wtx) Ref(sum string, size int64) error {
	return w.ref(sum, size, func(hash) error { return fmt.Errorf("corrupt store: content %s is missing", sum) })
}

// Use records a use of content sum now: a write is a use.
func (w *wtx) Use(sum string) error {
	h, err := w.s.sealer.blobKey(sum)
	if err != nil {
		return err
	}
	return w.touch(h)
}

// Stored is the size of all referenced content.
func (w *wtx) Stored() int64 { return w.c.Stored }

// MakeRoom evicts until the store fits (see makeRoom).
func (w *wtx) MakeRoom(keep string) (store.Evictions, error) {
	var h hash
	if keep != "" {
		var err error
		if h, err = w.s.sealer.blobKey(keep); err != nil {
			return store.Evictions{}, err
		}
	}
	return w.makeRoom(h)
}

// Now is the transaction's clock.
func (w *wtx) Now() time.Time { return w.now }

// Limits are the store's size limits.
func (w *wtx) Limits() check.Limits { return w.s.limits() }

// withContent is w for a write that offers content: Ref creates a blob
// the store does not hold with write, which stores its chunks (nil when
// they are already staged).
type withContent struct {
	*wtx
	write func(hash) error
}

// Ref references content sum, created with c.write when absent.
func (c withContent) Ref(sum string, size int64) error { return c.ref(sum, size, c.write) }

// putFile is rules.Put for content offered by write (see withContent).
func (w *wtx) putFile(req store.PutRequest, sum string, size int64, write func(hash) error) (store.PutResult, error) {
	out, err := rules.Put(withContent{w, write}, req, sum, size)
	if err != nil {
		return store.PutResult{}, err
	}
	return out.Result(), nil
}
