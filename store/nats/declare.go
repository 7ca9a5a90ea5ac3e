package nats

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
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
	mode := d.Mode & fs.ModePerm
	if r == nil {
		next := &record{Path: d.Path, Kind: d.Kind, Mode: mode, MTime: t.now, Created: t.now, Updated: t.now, Writer: req.Writer, Source: req.Source}
		if !d.MTime.IsZero() {
			next.MTime = utc(d.MTime)
		}
		if d.Kind == store.KindDir {
			next.Explicit = true
		} else {
			next.Size, next.Declared = max(d.Size, 0), d.SHA256
		}
		res.Created++
		return t.put(store.EventCreated, next)
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
				if err := t.unref(r.SHA256); err != nil {
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
	next.Updated, next.Writer, next.Source = t.now, req.Writer, req.Source
	return t.put(store.EventUpdated, &next)
}
