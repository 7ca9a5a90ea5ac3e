package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Declare records req.Entries in one transaction: all apply or none do.
// Declarations apply in order, so a later one for the same path wins. It is
// safe for concurrent use.
//
// A file with no entry becomes a placeholder (Present false, SHA256 "",
// DeclaredSHA256 the declared hash). A present file whose declared Size,
// MTime or SHA256 differs from the stored one loses its content and
// becomes a placeholder with the declared size, mtime and hash (counted
// Stale); a placeholder whose declared size, mtime or hash differs takes
// them (also counted Stale; a hash not declared then is unknown). A
// directory becomes explicit. Mode 0 in a declaration leaves the stored
// mode alone. Implicit parent directories are created but not counted.
func (s *Store) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	if err := check.Declarations(req.Entries); err != nil {
		return store.DeclareResult{}, err
	}
	if len(req.Entries) == 0 {
		return store.DeclareResult{}, s.check(ctx)
	}
	var res store.DeclareResult
	err := s.update(ctx, func(w *wtx) error {
		var err error
		res, err = rules.Declare(w, req)
		return err
	})
	if err != nil {
		return store.DeclareResult{}, pathErr("declare", "", err)
	}
	return res, nil
}
