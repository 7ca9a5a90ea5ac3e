package bolt

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
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
	mode := d.Mode & fs.ModePerm
	if r == nil {
		next := &record{Kind: d.Kind, Ino: w.nextIno(), Mode: mode, MTime: w.now, Created: w.now, Updated: w.now, Writer: req.Writer, Source: req.Source}
		if !d.MTime.IsZero() {
			next.MTime = utc(d.MTime)
		}
		if d.Kind == store.KindDir {
			next.Explicit = true
		} else {
			next.Size, next.Declared = max(d.Size, 0), d.SHA256
		}
		res.Created++
		return w.put(store.EventCreated, d.Path, next)
	}

	next := *r
	if mode != 0 {
		next.Mode = mode
	}
	stale := false
	if d.Kind == store.KindDir {
		next.Explicit = true
	} else {
		sizeDiffers := d.Size != -1 && d.Size != r.Size
		mtimeDiffers := !d.MTime.IsZero() && !d.MTime.Equal(r.MTime)
		hashDiffers := d.SHA256 != "" && (r.Present && d.SHA256 != r.SHA256 || !r.Present && d.SHA256 != r.Declared)
		stale = sizeDiffers || mtimeDiffers || hashDiffers
		if stale {
			if r.Present {
				if err := w.unref(r.SHA256); err != nil {
					return err
				}
			}
			next.Present, next.SHA256, next.Declared = false, "", d.SHA256
			if d.Size != -1 {
				next.Size = d.Size
			}
			if !d.MTime.IsZero() {
				next.MTime = utc(d.MTime)
			}
		}
	}
	if stale {
		res.Stale++
	} else {
		res.Unchanged++
	}
	if sameMeta(r, &next) {
		return nil
	}
	next.Updated, next.Writer, next.Source = w.now, req.Writer, req.Source
	return w.put(store.EventUpdated, d.Path, &next)
}
