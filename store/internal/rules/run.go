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

// Remove is store.Store.Remove: req checked, then removed (see
// removeIn) in one transaction of c.
func Remove(ctx context.Context, c Committer, req store.RemoveRequest) error {
	if err := check.Remove(req.Path); err != nil {
		return err
	}
	err := c.Update(ctx, func(t Txn) error { return removeIn(t, req) })
	return check.PathError("remove", req.Path, err)
}

// Declare is store.Store.Declare: req checked, then declared (see
// declareIn) in one transaction of c.
func Declare(ctx context.Context, c Committer, req store.DeclareRequest) (store.DeclareResult, error) {
	if err := check.Declarations(req.Entries); err != nil {
		return store.DeclareResult{}, err
	}
	if len(req.Entries) == 0 {
		return store.DeclareResult{}, c.Check(ctx)
	}
	var res store.DeclareResult
	err := c.Update(ctx, func(t Txn) error {
		var err error
		res, err = declareIn(t, req)
		return err
	})
	if err != nil {
		return store.DeclareResult{}, check.PathError("declare", "", err)
	}
	return res, nil
}

// Copy is store.Store.Copy (see transferIn) in one transaction of c.
func Copy(ctx context.Context, c Committer, req store.CopyRequest) (store.CopyResult, error) {
	return run(ctx, c, transfer.Copy(req))
}

// Move is store.Store.Move (see transferIn) in one transaction of c.
func Move(ctx context.Context, c Committer, req store.MoveRequest) (store.CopyResult, error) {
	return run(ctx, c, transfer.Move(req))
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
		out, err = transferIn(t, tr)
		return err
	})
	if err != nil {
		return store.CopyResult{}, check.PathError(tr.Op(), tr.From, err)
	}
	return out.result(), nil
}
