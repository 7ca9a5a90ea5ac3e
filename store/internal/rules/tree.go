package rules

import (
	"fmt"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
	"github.com/depotfs/depotfs/store/internal/uploadrec"
)

// CheckParents fails with store.ErrConflict when an ancestor of p is a
// file: nothing can be written at p. It writes nothing.
func CheckParents(t Txn, p string) error { return parents(t, p, false) }

// CheckChunk fails unless chunk c may join its upload u (nil: c starts
// it): c repeats what the first chunk fixed and, until the upload
// completed, the file could be written at its path: an upload that
// never could fails at its first chunk.
func CheckChunk(t Txn, u *uploadrec.Upload, c store.Chunk) error {
	if u != nil {
		if err := u.Matches(c); err != nil || u.Result != nil {
			return err
		}
	}
	if err := CheckParents(t, c.File.Path); err != nil {
		return err
	}
	r, err := t.Get(c.File.Path)
	if err != nil {
		return err
	}
	return entryrec.CheckWrite(r, c.File.IfAbsent, c.File.IfRevision)
}

// parents is CheckParents; with create, it also creates the missing
// ancestors of p as implicit directories.
func parents(t Txn, p string, create bool) error {
	for _, dir := range depotpath.Parents(p) {
		r, err := t.Get(dir)
		switch {
		case dir == depotpath.Root:
		case err != nil:
			return err
		case r == nil && !create:
			return nil // nothing below a missing directory exists
		case r == nil:
			now := t.Now()
			if _, err := write(t, store.EventCreated, dir, nil, entryrec.Record{Kind: store.KindDir, MTime: now, Created: now, Updated: now}); err != nil {
				return err
			}
		case r.Kind != store.KindDir:
			return fmt.Errorf("%w: %s is a file", store.ErrConflict, dir)
		}
	}
	return nil
}

// write is t.Put of next over old (nil: none) at p, old retained as a
// version (see retain). The directory holding p changes its times when
// the write creates p or gives it new content, as a create or a
// rename-replace moves them on a local filesystem (the mount shows an
// update so); a change of metadata alone, or an eviction, leaves them.
func write(t Txn, kind store.EventKind, p string, old *entryrec.Record, next entryrec.Record) (*entryrec.Record, error) {
	kept, err := t.Put(kind, p, next)
	if err != nil {
		return nil, err
	}
	if kind == store.EventCreated || entryrec.NewContent(old, &next) {
		t.TouchDir(p)
	}
	return kept, retain(t, p, old, &next, true)
}

// remove deletes the entry r at p, dropping its content reference and
// moving its directory's times. r is retained as a version when a
// snapshot holds it or, with history set, as the path's history.
func remove(t Txn, p string, r *entryrec.Record, history bool) error {
	if err := t.Delete(p, r); err != nil {
		return err
	}
	t.TouchDir(p)
	if err := retain(t, p, r, nil, history); err != nil {
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
		if err := remove(t, dirs[i], r, false); err != nil {
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
				if err := remove(t, d.Path, d.Rec, true); err != nil {
					return err
				}
			}
		}
	}
	if err := remove(t, p, r, true); err != nil {
		return err
	}
	return prune(t, p)
}

// Expire removes the expired file r at p, as Remove would, but keeps no
// history of it: its content has outlived its time. A snapshot that holds
// it keeps it.
func Expire(t Txn, p string, r *entryrec.Record) error {
	if err := remove(t, p, r, false); err != nil {
		return err
	}
	return prune(t, p)
}
