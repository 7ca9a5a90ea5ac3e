package bolt

import (
	"context"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

// Copy copies the file or directory tree at req.From to req.To in one
// transaction. Copies reference the source's blobs (their reference counts
// grow); no chunk is read or written, so copying a 1 GiB file costs a few
// tree records. It is safe for concurrent use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Copy(req))
}

// Move renames the file or directory tree at req.From to req.To in one
// transaction: the new entries are created (parents first), then the old
// ones removed (children first), each with its event. Content is not
// touched. It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Move(req))
}

func (s *Store) transfer(ctx context.Context, t transfer.Transfer) (store.CopyResult, error) {
	if err := t.Check(); err != nil {
		return store.CopyResult{}, err
	}
	var res store.CopyResult
	failed := t.From
	err := s.update(ctx, func(w *wtx) error {
		var err error
		res, failed, err = w.transfer(t)
		return err
	})
	if err != nil {
		return store.CopyResult{}, pathErr(t.Op(), failed, err)
	}
	return res, nil
}

// transfer applies t in w and returns the result, or the path an error
// concerns and the error.
func (w *wtx) transfer(t transfer.Transfer) (store.CopyResult, string, error) {
	src, err := getEntry(w.tree, t.From)
	if err != nil {
		return store.CopyResult{}, t.From, err
	}
	if err := t.CheckSource(src); err != nil {
		return store.CopyResult{}, t.From, err
	}
	if err := checkParents(w.tree, t.To); err != nil {
		return store.CopyResult{}, t.To, err
	}
	dst, err := getEntry(w.tree, t.To)
	if err != nil {
		return store.CopyResult{}, t.To, err
	}
	if err := t.CheckDestination(src, dst); err != nil {
		return store.CopyResult{}, t.To, err
	}
	if err := w.parents(t.To); err != nil {
		return store.CopyResult{}, t.To, err
	}

	// The tree under From, shallowest first, so each parent is written
	// before its children.
	var below []pathRecord
	if src.Kind == store.KindDir {
		if below, err = descendants(w.tree, t.From); err != nil {
			return store.CopyResult{}, t.From, err
		}
		slices.Reverse(below)
	}
	res := transfer.Result(dst)
	top, err := w.place(t, t.To, src, dst)
	if err != nil {
		return store.CopyResult{}, t.To, err
	}
	res.Entry = top.Entry(t.To)
	for _, d := range append([]pathRecord{{t.From, src}}, below...) {
		transfer.Tally(&res, d.rec)
		if d.path == t.From {
			continue
		}
		np := t.Target(d.path)
		if _, err := w.place(t, np, d.rec, nil); err != nil {
			return store.CopyResult{}, np, err
		}
	}
	// The copied directories keep their times, as with cp -a and mv: only
	// the directories the tree was placed in or taken from change.
	w.untouchWithin(t.To)
	if !t.Move {
		return res, "", nil
	}
	// Remove the old tree, children first, releasing the references the
	// new entries took over.
	slices.Reverse(below)
	for _, d := range below {
		if err := w.remove(d.path, d.rec); err != nil {
			return store.CopyResult{}, d.path, err
		}
	}
	if err := w.remove(t.From, src); err != nil {
		return store.CopyResult{}, t.From, err
	}
	if err := w.pruneParents(t.From); err != nil {
		return store.CopyResult{}, t.From, err
	}
	return res, "", nil
}

// place writes the copy (or moved version) of r at p, replacing the file
// old when it is not nil, and returns the record written.
func (w *wtx) place(t transfer.Transfer, p string, r, old *record) (*record, error) {
	if r.Kind == store.KindFile && r.Present {
		missing := func(hash) error { return fmt.Errorf("corrupt store: content %s is missing", r.SHA256) }
		if err := w.ref(r.SHA256, r.Size, missing); err != nil {
			return nil, err
		}
	}
	next, kind := t.Place(r, old, w.now)
	if old == nil {
		next.Ino = w.nextIno()
	} else if old.Present {
		if err := w.unref(old.SHA256); err != nil {
			return nil, err
		}
	}
	if err := w.put(kind, p, &next); err != nil {
		return nil, err
	}
	return &next, nil
}
