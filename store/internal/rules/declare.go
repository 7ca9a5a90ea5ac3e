package rules

import (
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// declareIn records req.Entries in t, in order, so a later declaration
// of a path wins (see store.DeclareRequest and entryrec.Declare): a new
// entry is created with its missing parents, a present file the
// declaration makes stale releases its content. An error names the
// declaration's path.
func declareIn(t Txn, req store.DeclareRequest) (store.DeclareResult, error) {
	var res store.DeclareResult
	for _, d := range req.Entries {
		if err := declare(t, d, req, &res); err != nil {
			return store.DeclareResult{}, check.PathError("declare", d.Path, err)
		}
	}
	return res, nil
}

func declare(t Txn, d store.Declaration, req store.DeclareRequest, res *store.DeclareResult) error {
	if d.Path == depotpath.Root {
		res.Unchanged++
		return nil
	}
	if err := CheckParents(t, d.Path); err != nil {
		return err
	}
	r, err := t.Get(d.Path)
	if err != nil {
		return err
	}
	if r != nil && r.Kind != d.Kind {
		return fmt.Errorf("%w: declared a %s, the path is a %s", store.ErrConflict, d.Kind, r.Kind)
	}
	if err := parents(t, d.Path, true); err != nil {
		return err
	}
	next, stale, changed := entryrec.Declare(r, d, req.Writer, req.Source, t.Now())
	kind := store.EventUpdated
	switch {
	case r == nil:
		res.Created++
		kind = store.EventCreated
	case stale:
		res.Stale++
		if sum := entryrec.PresentSum(r); sum != "" {
			if err := t.Unref(sum); err != nil {
				return err
			}
		}
	default:
		res.Unchanged++
	}
	if !changed {
		return nil
	}
	_, err = write(t, kind, d.Path, r, next)
	return err
}
