package bolt

import (
	"context"
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
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
	failed := ""
	err := s.update(ctx, func(w *wtx) error {
		res = store.DeclareResult{}
		for _, d := range req.Entries {
			if err := w.declare(d, req, &res); err != nil {
				failed = d.Path
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.DeclareResult{}, pathErr("declare", failed, err)
	}
	return res, nil
}

func (w *wtx) declare(d store.Declaration, req store.DeclareRequest, res *store.DeclareResult) error {
	if d.Path == depotpath.Root {
		res.Unchanged++
		return nil
	}
	if err := checkParents(w.tree, d.Path); err != nil {
		return err
	}
	r, err := getEntry(w.tree, d.Path)
	if err != nil {
		return err
	}
	if r != nil && r.Kind != d.Kind {
		return fmt.Errorf("%w: declared a %s, the path is a %s", store.ErrConflict, d.Kind, r.Kind)
	}
	if err := w.parents(d.Path); err != nil {
		return err
	}
	next, stale, changed := entryrec.Declare(r, d, req.Writer, req.Source, w.now)
	switch {
	case r == nil:
		next.Ino = w.nextIno()
		res.Created++
		return w.put(store.EventCreated, d.Path, &next)
	case stale:
		res.Stale++
		if r.Present {
			if err := w.unref(r.SHA256); err != nil {
				return err
			}
		}
	default:
		res.Unchanged++
	}
	if !changed {
		return nil
	}
	return w.put(store.EventUpdated, d.Path, &next)
}
