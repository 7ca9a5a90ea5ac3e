package rules

import (
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
)

// CheckParents fails with store.ErrConflict when an ancestor of p is a
// file: nothing can be written at p. It writes nothing.
func CheckParents(t Txn, p string) error {
	for _, dir := range depotpath.Parents(p) {
		if dir == depotpath.Root {
			continue
		}
		r, err := t.Get(dir)
		if err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		if r.Kind != store.KindDir {
			return fmt.Errorf("%w: %s is a file", store.ErrConflict, dir)
		}
	}
	return nil
}

// parents creates the missing ancestors of p as implicit directories;
// CheckParents has found none of them a file.
func parents(t Txn, p string) error {
	for _, dir := range depotpath.Parents(p) {
		if dir == depotpath.Root {
			continue
		}
		r, err := t.Get(dir)
		if err != nil {
			return err
		}
		if r != nil {
			continue
		}
		now := t.Now()
		if _, err := t.Put(store.EventCreated, dir, entryrec.Record{Kind: store.KindDir, MTime: now, Created: now, Updated: now}); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the entry r at p and drops its content reference.
func remove(t Txn, p string, r *entryrec.Record) error {
	if err := t.Delete(p, r); err != nil {
		return err
	}
	if sum := entryrec.PresentSum(r); sum != "" {
		return t.Unref(sum)
	}
	return nil
}

// prune removes the implicit ancestors of p, nearest first, that no
// longer have children.
func prune(t Txn, p string) error {
	dirs := depotpath.Parents(p)
	for i := len(dirs) - 1; i >= 1; i-- {
		r, err := t.Get(dirs[i])
		if err != nil || r == nil || r.Explicit {
			return err
		}
		if has, err := t.HasChildren(dirs[i]); err != nil || has {
			return err
		}
		if err := remove(t, dirs[i], r); err != nil {
			return err
		}
	}
	return nil
}

// removeIn deletes the entry at req.Path in t: a file, an empty
// directory, or with req.Recursive a directory and everything below it,
// deepest first; then the implicit parents it leaves empty.
func removeIn(t Txn, req store.RemoveRequest) error {
	p := req.Path
	r, err := t.Get(p)
	if err != nil {
		return err
	}
	if r == nil {
		return store.ErrNotExist
	}
	if err := entryrec.CheckRevision(r, req.IfRevision); err != nil {
		return err
	}
	if r.Kind == store.KindDir {
		has, err := t.HasChildren(p)
		if err != nil {
			return err
		}
		if has && !req.Recursive {
			return store.ErrNotEmpty
		}
		if has {
			below, err := t.Descendants(p)
			if err != nil {
				return err
			}
			for _, d := range below {
				if err := remove(t, d.Path, d.Rec); err != nil {
					return err
				}
			}
		}
	}
	if err := remove(t, p, r); err != nil {
		return err
	}
	return prune(t, p)
}

// Expire removes the expired file r at p, as Remove would.
func Expire(t Txn, p string, r *entryrec.Record) error {
	if err := remove(t, p, r); err != nil {
		return err
	}
	return prune(t, p)
}
