package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// Remove deletes the entry at req.Path (a directory with everything below
// it when req.Recursive) and the implicit parents it leaves empty, in one
// atomic batch. It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	p := req.Path
	if err := check.Remove(p); err != nil {
		return err
	}
	err := s.update(ctx, func(t *txn) error {
		r := t.get(p)
		if r == nil {
			return store.ErrNotExist
		}
		if err := entryrec.CheckRevision(r.rec(), req.IfRevision); err != nil {
			return err
		}
		if r.Kind == store.KindDir && t.hasChildren(p) {
			if !req.Recursive {
				return store.ErrNotEmpty
			}
			for _, d := range t.descendants(p) {
				if err := t.remove(d); err != nil {
					return err
				}
			}
		}
		if err := t.remove(r); err != nil {
			return err
		}
		return t.pruneParents(p)
	}, nil)
	return check.PathError("remove", p, err)
}
