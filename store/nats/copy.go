package nats

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// Copy makes req.To a copy of req.From in one atomic batch; copies share
// the source's content (see store.CopyRequest). It is safe for concurrent
// use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return s.transfer(ctx, "copy", transfer{
		from: req.From, to: req.To, ifAbsent: req.IfAbsent, ifRevision: req.IfRevision,
		writer: req.Writer, source: req.Source,
	})
}

// Move renames req.From to req.To in one atomic batch (see
// store.MoveRequest). It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return s.transfer(ctx, "move", transfer{
		from: req.From, to: req.To, ifAbsent: req.IfAbsent, ifRevision: req.IfRevision,
		writer: req.Writer, move: true,
	})
}

// transfer is a Copy or a Move.
type transfer struct {
	from, to   string
	ifAbsent   bool
	ifRevision uint64
	writer     string
	source     string
	move       bool
}

func (s *Store) transfer(ctx context.Context, op string, tr transfer) (store.CopyResult, error) {
	if err := check.Transfer(op, tr.from, tr.to); err != nil {
		return store.CopyResult{}, err
	}
	var res store.CopyResult
	var top *record
	failed := tr.from
	err := s.update(ctx, func(t *txn) error {
		var err error
		res, top, failed, err = t.transfer(tr)
		return err
	}, nil)
	if err != nil {
		return store.CopyResult{}, check.PathError(op, failed, err)
	}
	res.Entry = top.entry()
	return res, nil
}

func (t *txn) transfer(tr transfer) (store.CopyResult, *record, string, error) {
	src := t.get(tr.from)
	if src == nil {
		return store.CopyResult{}, nil, tr.from, store.ErrNotExist
	}
	if err := checkRevision(src, tr.ifRevision); err != nil {
		return store.CopyResult{}, nil, tr.from, err
	}
	if err := t.checkParents(tr.to); err != nil {
		return store.CopyResult{}, nil, tr.to, err
	}
	dst := t.get(tr.to)
	switch {
	case dst == nil:
	case tr.ifAbsent:
		return store.CopyResult{}, nil, tr.to, store.ErrExist
	case src.Kind == store.KindDir:
		return store.CopyResult{}, nil, tr.to, fmt.Errorf("%w: the destination exists; a directory is only copied or moved to a new path", store.ErrExist)
	case dst.Kind == store.KindDir:
		return store.CopyResult{}, nil, tr.to, fmt.Errorf("%w: the destination is a directory", store.ErrConflict)
	}
	var below []*record
	if src.Kind == store.KindDir {
		below = t.descendants(tr.from)
		slices.Reverse(below)
	}
	if err := t.parents(tr.to); err != nil {
		return store.CopyResult{}, nil, tr.to, err
	}
	res := store.CopyResult{Status: store.StatusCreated}
	top, err := t.place(tr, tr.to, src, dst)
	if err != nil {
		return store.CopyResult{}, nil, tr.to, err
	}
	if dst != nil {
		res.Status = store.StatusUpdated
	}
	for _, d := range append([]*record{src}, below...) {
		res.Entries++
		if d.Kind == store.KindFile && d.Present {
			res.Bytes += d.Size
		}
		if d.Path == tr.from {
			continue
		}
		np := tr.to + strings.TrimPrefix(d.Path, tr.from)
		if _, err := t.place(tr, np, d, nil); err != nil {
			return store.CopyResult{}, nil, np, err
		}
	}
	// The copied directories keep their times, as with cp -a and mv: only
	// the directories the tree was placed in or taken from change.
	t.untouchWithin(tr.to)
	if !tr.move {
		return res, top, "", nil
	}
	slices.Reverse(below)
	for _, d := range below {
		if err := t.remove(d); err != nil {
			return store.CopyResult{}, nil, d.Path, err
		}
	}
	if err := t.remove(src); err != nil {
		return store.CopyResult{}, nil, tr.from, err
	}
	if err := t.pruneParents(tr.from); err != nil {
		return store.CopyResult{}, nil, tr.from, err
	}
	return res, top, "", nil
}

// place writes a copy of r at p, replacing the file old when there is one.
func (t *txn) place(tr transfer, p string, r, old *record) (*record, error) {
	next := *r
	next.Path = p
	if r.Kind == store.KindFile && r.Present {
		if err := t.ref(r.SHA256, r.Size, fmt.Errorf("corrupt store: content %s is missing", r.SHA256)); err != nil {
			return nil, err
		}
	}
	if !tr.move {
		next.Created, next.Updates = t.now, 0
		if tr.source != "" {
			next.Source = tr.source
		}
	}
	next.Writer, next.Updated = tr.writer, t.now
	kind := store.EventCreated
	if old == nil {
		next.Ino = 0
	} else {
		kind = store.EventUpdated
		next.Ino, next.Created = old.Ino, old.Created
		next.Updates = old.Updates
		if !old.Present || old.SHA256 != r.SHA256 {
			next.Updates++
		}
		if old.Present {
			if err := t.unref(old.SHA256); err != nil {
				return nil, err
			}
		}
	}
	if err := t.put(kind, &next); err != nil {
		return nil, err
	}
	return &next, nil
}
