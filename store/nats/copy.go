package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

// Copy makes req.To a copy of req.From in one atomic batch; copies share
// the source's content (see store.CopyRequest). It is safe for concurrent
// use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Copy(req))
}

// Move renames req.From to req.To in one atomic batch (see
// store.MoveRequest). It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Move(req))
}

// transfer runs tr; the result's entry is read after the commit, which
// assigns its revision (and a new entry's inode).
func (s *Store) transfer(ctx context.Context, tr transfer.Transfer) (store.CopyResult, error) {
	if err := tr.Check(); err != nil {
		return store.CopyResult{}, err
	}
	var out *rules.Copied
	err := s.update(ctx, func(t *txn) error {
		var err error
		out, err = rules.Transfer(t, tr)
		return err
	}, nil)
	if err != nil {
		return store.CopyResult{}, check.PathError(tr.Op(), tr.From, err)
	}
	return out.Result(), nil
}
