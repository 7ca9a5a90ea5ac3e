package nats

import (
	"context"
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
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
	failed := ""
	err := s.update(ctx, func(t *txn) error {
		res = store.DeclareResult{}
		for _, d := range req.Entries {
			if err := t.declare(d, req, &res); err != nil {
				failed = d.Path
				return err
			}
		}
		return nil
	}, nil)
	if err != nil {
		return store.DeclareResult{}, check.PathError("declare", failed, err)
	}
	return res, nil
}

func (t *txn) declare(d store.Declaration, req store.DeclareRequest, res *store.DeclareResult) error {
	if d.Path == depotpath.Root {
		res.Unchanged++
		return nil
	}
	if err := t.checkParents(d.Path); err != nil {
		return err
	}
	r := t.get(d.Path)
	if r != nil && r.Kind != d.Kind {
		return fmt.Errorf("%w: declared a %s, the path is a %s", store.ErrConflict, d.Kind, r.Kind)
	}
	if err := t.parents(d.Path); err != nil {
		return err
	}
	next := record{Path: d.Path}
	if r != nil {
		next = *r
	}
	var stale, changed bool
	next.Record, stale, changed = entryrec.Declare(r.rec(), d, req.Writer, req.Source, t.now)
	switch {
	case r == nil:
		res.Created++
		return t.put(store.EventCreated, &next)
	case stale:
		res.Stale++
		if r.Present {
			if err := t.unref(r.SHA256); err != nil {
				return err
			}
		}
	default:
		res.Unchanged++
	}
	if !changed {
		return nil
	}
	return t.put(store.EventUpdated, &next)
}
