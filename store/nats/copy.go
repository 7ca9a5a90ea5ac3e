package nats

import (
	"context"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
	"github.com/depotfs/depotfs/store/internal/transfer"
)

// Copy makes req.To a copy of req.From in one atomic batch; copies share
// the source's content (see store.CopyRequest). It is safe for concurrent
// use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Copy(req))
}

// Move renames req.From to req.To in one atomic batch (see
// store.MoveRequest). It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return s.transfer(ctx, transfer.Move(req))
}

// transfer runs tr; the result's entry is read after the commit, which
// assigns its revision (and a new entry's inode).
func (s *Store) transfer(ctx context.Context, tr transfer.Transfer) (store.CopyResult, error) {
	if err := tr.Check(); err != nil {
		return store.CopyResult{}, err
	}
	var res store.CopyResult
	var top *record
	failed := tr.From
	err := s.update(ctx, func(t *txn) error {
		var err error
		res, top, failed, err = t.transfer(tr)
		return err
	}, nil)
	if err != nil {
		return store.CopyResult{}, check.PathError(tr.Op(), failed, err)
	}
	res.Entry = top.entry()
	return res, nil
}

func (t *txn) transfer(tr transfer.Transfer) (store.CopyResult, *record, string, error) {
	src := t.get(tr.From)
	if err := tr.CheckSource(src.rec()); err != nil {
		return store.CopyResult{}, nil, tr.From, err
	}
	if err := t.checkParents(tr.To); err != nil {
		return store.CopyResult{}, nil, tr.To, err
	}
	dst := t.get(tr.To)
	if err := tr.CheckDestination(src.rec(), dst.rec()); err != nil {
		return store.CopyResult{}, nil, tr.To, err
	}
	var below []*record
	if src.Kind == store.KindDir {
		below = t.descendants(tr.From)
		slices.Reverse(below)
	}
	if err := t.parents(tr.To); err != nil {
		return store.CopyResult{}, nil, tr.To, err
	}
	res := transfer.Result(dst.rec())
	top, err := t.place(tr, tr.To, src, dst)
	if err != nil {
		return store.CopyResult{}, nil, tr.To, err
	}
	for _, d := range append([]*record{src}, below...) {
		transfer.Tally(&res, d.rec())
		if d.Path == tr.From {
			continue
		}
		np := tr.Target(d.Path)
		if _, err := t.place(tr, np, d, nil); err != nil {
			return store.CopyResult{}, nil, np, err
		}
	}
	// The copied directories keep their times, as with cp -a and mv: only
	// the directories the tree was placed in or taken from change.
	t.untouchWithin(tr.To)
	if !tr.Move {
		return res, top, "", nil
	}
	slices.Reverse(below)
	for _, d := range below {
		if err := t.remove(d); err != nil {
			return store.CopyResult{}, nil, d.Path, err
		}
	}
	if err := t.remove(src); err != nil {
		return store.CopyResult{}, nil, tr.From, err
	}
	if err := t.pruneParents(tr.From); err != nil {
		return store.CopyResult{}, nil, tr.From, err
	}
	return res, top, "", nil
}

// place writes a copy of r at p, replacing the file old when there is one.
func (t *txn) place(tr transfer.Transfer, p string, r, old *record) (*record, error) {
	if r.Kind == store.KindFile && r.Present {
		if err := t.ref(r.SHA256, r.Size, fmt.Errorf("corrupt store: content %s is missing", r.SHA256)); err != nil {
			return nil, err
		}
	}
	next := *r
	next.Path = p
	var kind store.EventKind
	next.Record, kind = tr.Place(r.rec(), old.rec(), t.now)
	if old != nil && old.Present {
		if err := t.unref(old.SHA256); err != nil {
			return nil, err
		}
	}
	if err := t.put(kind, &next); err != nil {
		return nil, err
	}
	return &next, nil
}
