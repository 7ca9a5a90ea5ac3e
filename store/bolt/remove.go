package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Remove deletes the entry at req.Path in one transaction: a file, an empty
// directory, or with req.Recursive a directory and everything below it
// (deepest first, one event each); a non-empty directory without Recursive
// fails with store.ErrNotEmpty. Implicit parent directories left empty
// are removed too. Removing "/" fails with an error wrapping fs.ErrInvalid.
// It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	if err := check.Remove(req.Path); err != nil {
		return err
	}
	err := s.update(ctx, func(w *wtx) error { return rules.Remove(w, req) })
	return pathErr("remove", req.Path, err)
}
