package rules

import (
	"slices"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

// copied is the outcome of a copy or a move; result is final once the
// transaction has committed.
type copied struct {
	res store.CopyResult
	top Entry
}

// result is the store's answer to the copy or move.
func (c *copied) result() store.CopyResult {
	res := c.res
	res.Entry = c.top.Entry()
	return res
}

// transferIn copies or moves the file or tree at tr.From to tr.To: the new
// entries, parents first, referencing the source's content (no byte is
// copied); for a move, then the old ones removed, children first, and
// the implicit parents left empty. Every error names the path it
// concerns.
func transferIn(t Txn, tr transfer.Transfer) (*copied, error) {
	fail := func(p string, err error) (*copied, error) { return nil, check.PathError(tr.Op(), p, err) }
	src, err := t.Get(tr.From)
	if tr.FromRevision != 0 && err == nil {
		src, err = At(t, tr.From, tr.FromRevision)
	}
	if err != nil {
		return fail(tr.From, err)
	}
	if err := tr.CheckSource(src); err != nil {
		return fail(tr.From, err)
	}
	if err := CheckParents(t, tr.To); err != nil {
		return fail(tr.To, err)
	}
	dst, err := t.Get(tr.To)
	if err != nil {
		return fail(tr.To, err)
	}
	if err := tr.CheckDestination(src, dst); err != nil {
		return fail(tr.To, err)
	}
	// The tree under From, shallowest first, so each parent is written
	// before its children. It is read before anything is written: the
	// destination's parents are never below From.
	var below []Entry
	if src.Kind == store.KindDir {
		if below, err = t.Descendants(tr.From); err != nil {
			return fail(tr.From, err)
		}
		slices.Reverse(below)
	}
	if err := parents(t, tr.To, true); err != nil {
		return fail(tr.To, err)
	}
	out := &copied{res: transfer.Result(dst)}
	top, err := place(t, tr, tr.To, src, dst)
	if err != nil {
		return fail(tr.To, err)
	}
	out.top = Entry{tr.To, top}
	transfer.Tally(&out.res, src)
	moved := func(to, from string) {
		if tr.Move {
			t.Moved(to, from)
		}
	}
	moved(tr.To, tr.From)
	for _, d := range below {
		transfer.Tally(&out.res, d.Rec)
		np := tr.Target(d.Path)
		if _, err := place(t, tr, np, d.Rec, nil); err != nil {
			return fail(np, err)
		}
		moved(np, d.Path)
	}
	// The copied directories keep their times, as with cp -a and mv: only
	// the directories the tree was placed in or taken from change.
	t.UntouchWithin(tr.To)
	if !tr.Move {
		return out, nil
	}
	// Remove the old tree, children first, releasing the references the
	// new entries took over.
	slices.Reverse(below)
	for _, d := range below {
		if err := remove(t, d.Path, d.Rec, false); err != nil {
			return fail(d.Path, err)
		}
	}
	if err := remove(t, tr.From, src, false); err != nil {
		return fail(tr.From, err)
	}
	if err := prune(t, tr.From); err != nil {
		return fail(tr.From, err)
	}
	return out, nil
}

// place writes the copy (or moved version) of r at p, replacing the file
// old when it is not nil, and returns the record written.
func place(t Txn, tr transfer.Transfer, p string, r, old *entryrec.Record) (*entryrec.Record, error) {
	if sum := entryrec.PresentSum(r); sum != "" {
		if err := t.Ref(sum, r.Size); err != nil {
			return nil, err
		}
	}
	next, kind := tr.Place(r, old, t.Now())
	if sum := entryrec.PresentSum(old); sum != "" {
		if err := t.Unref(sum); err != nil {
			return nil, err
		}
	}
	return write(t, kind, p, old, next)
}
