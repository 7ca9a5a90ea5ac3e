package tool

import (
	"context"
	"errors"
	"time"

	"github.com/depotfs/depotfs/store"
)

// ErrStopWalk, returned by a walk's visitor, ends the walk without error.
var ErrStopWalk = errors.New("walk stopped")

// Walk visits the entries below the directory dir in depth-first
// pre-order, siblings in name order (the order of Store.ReadDir). When
// recursive is set, it descends into each directory for which visit
// reports true. Each directory is listed in its own read transaction: a
// walk is not one snapshot, and entries changed meanwhile may be seen or
// missed. Errors from the store are wrapped in StoreError.
func (g *Store) Walk(ctx context.Context, dir string, recursive bool, visit func(e store.Entry) (descend bool, err error)) error {
	err := g.walkDir(ctx, dir, recursive, visit)
	if errors.Is(err, ErrStopWalk) {
		return nil
	}
	return err
}

func (g *Store) walkDir(ctx context.Context, dir string, recursive bool, visit func(e store.Entry) (bool, error)) error {
	entries, err := g.ReadDir(ctx, dir)
	if err != nil {
		return &StoreError{Op: "readdir", Path: dir, Err: err}
	}
	for _, e := range entries {
		descend, err := visit(e)
		if err != nil {
			return err
		}
		if recursive && descend && e.IsDir() {
			if err := g.walkDir(ctx, e.Path, true, visit); err != nil {
				// A directory removed while the walk runs is skipped.
				if errors.Is(err, store.ErrNotExist) {
					continue
				}
				return err
			}
		}
	}
	return nil
}

// EntryTime is the modification time shown for e: its mtime, else its last
// change, else its creation (the root has none of them: the epoch).
func EntryTime(e store.Entry) time.Time {
	for _, t := range []time.Time{e.MTime, e.Updated, e.Created} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Unix(0, 0)
}
