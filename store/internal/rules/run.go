package rules

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

// Committer runs the write rules in a store's transactions.
type Committer interface {
	// Update runs fn in a write transaction and returns once that
	// transaction has committed, or fn or the commit failed. fn may run
	// more than once, each time in a fresh transaction.
	Update(ctx context.Context, fn func(Txn) error) error
	// Check fails as Update would before running anything (a closed
	// store, a done context), and writes nothing.
	Check(ctx context.Context) error
}

// Writes are the store.Store writes that are the rules alone, each in
// one transaction of C (CreateSnapshot and DeleteSnapshot too): a store
// embeds them over its Committer instead of forwarding each call. They
// are safe for concurrent use.
type Writes struct{ C Committer }

// Remove is store.Store.Remove: a file, an empty directory, or with
// req.Recursive a directory and everything below it (deepest first, one
// event each); the implicit parents it leaves empty go too (see
// removeIn).
func (w Writes) Remove(ctx context.Context, req store.RemoveRequest) error {
	if err := check.Remove(req.Path); err != nil {
		return err
	}
	err := w.C.Update(ctx, func(t Txn) error { return removeIn(t, req) })
	return check.PathError("remove", req.Path, err)
}

// Declare is store.Store.Declare: every declaration applies, in order
// (a later one for the same path wins), or none does (see declareIn). A
// placeholder whose declared size, mtime or hash differs takes them
// (counted Stale; a hash not declared then is unknown); Mode 0 leaves the
// stored mode alone; implicit parents are created but not counted.
func (w Writes) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	if err := check.Declarations(req.Entries); err != nil {
		return store.DeclareResult{}, err
	}
	if len(req.Entries) == 0 {
		return store.DeclareResult{}, w.C.Check(ctx)
	}
	var res store.DeclareResult
	err := w.C.Update(ctx, func(t Txn) error {
		var err error
		res, err = declareIn(t, req)
		return err
	})
	if err != nil {
		return store.DeclareResult{}, check.PathError("declare", "", err)
	}
	return res, nil
}

// Copy is store.Store.Copy (see transferIn): copies reference the
// source's content, so copying a 1 GiB file or a tree writes records
// only.
func (w Writes) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return run(ctx, w.C, transfer.Copy(req))
}

// Move is store.Store.Move (see transferIn): the new entries are
// created, parents first, then the old ones removed, children first.
func (w Writes) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return run(ctx, w.C, transfer.Move(req))
}

// run checks tr and runs it in one transaction of c; the result's entry
// is read after the commit.
func run(ctx context.Context, c Committer, tr transfer.Transfer) (store.CopyResult, error) {
	if err := tr.Check(); err != nil {
		return store.CopyResult{}, err
	}
	var out *copied
	err := c.Update(ctx, func(t Txn) error {
		var err error
		if out, err = transferIn(t, tr); err != nil {
			return err
		}
		return check.PathError(tr.Op(), tr.To, t.CheckQuota())
	})
	if err != nil {
		return store.CopyResult{}, check.PathError(tr.Op(), tr.From, err)
	}
	return out.result(), nil
}
