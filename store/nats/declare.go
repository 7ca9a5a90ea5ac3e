package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Declare records files and directories without their content, all in one
// atomic batch (see store.Declaration). It is safe for concurrent use.
func (s *Store) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	if err := check.Declarations(req.Entries); err != nil {
		return store.DeclareResult{}, err
	}
	if len(req.Entries) == 0 {
		return store.DeclareResult{}, s.check(ctx)
	}
	var res store.DeclareResult
	err := s.update(ctx, func(t *txn) error {
		var err error
		res, err = rules.Declare(t, req)
		return err
	}, nil)
	if err != nil {
		return store.DeclareResult{}, check.PathError("declare", "", err)
	}
	return res, nil
}
