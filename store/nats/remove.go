package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Remove deletes the entry at req.Path (a directory with everything below
// it when req.Recursive) and the implicit parents it leaves empty, in one
// atomic batch. It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	if err := check.Remove(req.Path); err != nil {
		return err
	}
	err := s.update(ctx, func(t *txn) error { return rules.Remove(t, req) }, nil)
	return check.PathError("remove", req.Path, err)
}
