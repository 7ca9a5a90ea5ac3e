package bolt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/check"
)

// Copy copies the file or directory tree at req.From to req.To in one
// transaction. Copies reference the source's blobs (their reference counts
// grow); no chunk is read or written, so copying a 1 GiB file costs a few
// tree records. It is safe for concurrent use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return s.transfer(ctx, "copy", transfer{
		from: req.From, to: req.To, ifAbsent: req.IfAbsent, ifRevision: req.IfRevision,
		writer: req.Writer, source: req.Source,
	})
}

// Move renames the file or directory tree at req.From to req.To in one
// transaction: the new entries are created (parents first), then the old
// ones removed (children first), each with its event. Content is not
// touched. It is safe for concurrent use.
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
	source     string // Copy only: replaces each copy's provenance when set
	move       bool
}

func (s *Store) transfer(ctx context.Context, op string, t transfer) (store.CopyResult, error) {
	if err := check.Transfer(op, t.from, t.to); err != nil {
		return store.CopyResult{}, err
	}
	var res store.CopyResult
	failed := t.from
	err := s.update(ctx, func(w *wtx) error {
		var err error
		res, failed, err = w.transfer(t)
		return err
	})
	if err != nil {
		return store.CopyResult{}, pathErr(op, failed, err)
	}
	return res, nil
}

// transfer applies t in w and returns the result, or the path an error
// concerns and the error.
func (w *wtx) transfer(t transfer) (store.CopyResult, string, error) {
	src, err := getEntry(w.tree, t.from)
	if err != nil {
		return store.CopyResult{}, t.from, err
	}
	if src == nil {
		return store.CopyResult{}, t.from, store.ErrNotExist
	}
	if t.ifRevision != 0 && src.Revision != t.ifRevision {
		return store.CopyResult{}, t.from, fmt.Errorf("%w: expected %d, entry is at %d", store.ErrRevision, t.ifRevision, src.Revision)
	}
	if err := checkParents(w.tree, t.to); err != nil {
		return store.CopyResult{}, t.to, err
	}
	dst, err := getEntry(w.tree, t.to)
	if err != nil {
		return store.CopyResult{}, t.to, err
	}
	switch {
	case dst == nil:
	case t.ifAbsent:
		return store.CopyResult{}, t.to, store.ErrExist
	case src.Kind == store.KindDir:
		return store.CopyResult{}, t.to, fmt.Errorf("%w: the destination exists; a directory is only copied or moved to a new path", store.ErrExist)
	case dst.Kind == store.KindDir:
		return store.CopyResult{}, t.to, fmt.Errorf("%w: the destination is a directory", store.ErrConflict)
	}
	if err := w.parents(t.to); err != nil {
		return store.CopyResult{}, t.to, err
	}

	// The tree under From, shallowest first, so each parent is written
	// before its children.
	var below []pathRecord
	if src.Kind == store.KindDir {
		if below, err = descendants(w.tree, t.from); err != nil {
			return store.CopyResult{}, t.from, err
		}
		slices.Reverse(below)
	}
	res := store.CopyResult{Status: store.StatusCreated}
	top, err := w.place(t, t.to, src, dst)
	if err != nil {
		return store.CopyResult{}, t.to, err
	}
	if dst != nil {
		res.Status = store.StatusUpdated
	}
	res.Entry = top.entry(t.to)
	for _, d := range append([]pathRecord{{t.from, src}}, below...) {
		res.Entries++
		if d.rec.Kind == store.KindFile && d.rec.Present {
			res.Bytes += d.rec.Size
		}
		if d.path == t.from {
			continue
		}
		np := t.to + strings.TrimPrefix(d.path, t.from)
		if _, err := w.place(t, np, d.rec, nil); err != nil {
			return store.CopyResult{}, np, err
		}
	}
	// The copied directories keep their times, as with cp -a and mv: only
	// the directories the tree was placed in or taken from change.
	w.untouchWithin(t.to)
	if !t.move {
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
	if err := w.remove(t.from, src); err != nil {
		return store.CopyResult{}, t.from, err
	}
	if err := w.pruneParents(t.from); err != nil {
		return store.CopyResult{}, t.from, err
	}
	return res, "", nil
}

// place writes the copy (or moved version) of r at p, replacing the file
// old when it is not nil, and returns the record written.
func (w *wtx) place(t transfer, p string, r, old *record) (*record, error) {
	next := *r
	if r.Kind == store.KindFile && r.Present {
		missing := func(hash) error { return fmt.Errorf("corrupt store: content %s is missing", r.SHA256) }
		if err := w.ref(r.SHA256, r.Size, missing); err != nil {
			return nil, err
		}
	}
	if !t.move {
		next.Created, next.Updates = w.now, 0
		if t.source != "" {
			next.Source = t.source
		}
	}
	next.Writer, next.Updated = t.writer, w.now
	kind := store.EventCreated
	if old == nil {
		next.Ino = w.nextIno()
	} else {
		kind = store.EventUpdated
		next.Ino, next.Created = old.Ino, old.Created
		next.Updates = old.Updates
		if !old.Present || old.SHA256 != r.SHA256 {
			next.Updates++
		}
		if old.Present {
			if err := w.unref(old.SHA256); err != nil {
				return nil, err
			}
		}
	}
	if err := w.put(kind, p, &next); err != nil {
		return nil, err
	}
	return &next, nil
}
