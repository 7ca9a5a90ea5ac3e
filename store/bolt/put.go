package bolt

import (
	"context"
	"fmt"
	"io/fs"
	"time"

	"github.com/depotfs/depotfs/store"
)

// Put stores req.Data at req.Path in one transaction, creating implicit
// parent directories. It is safe for concurrent use.
//
// Content over Options.MaxFileBytes or Options.MaxStoreBytes fails with
// store.ErrLimit. When new content would take the store over
// MaxStoreBytes, the least recently used unpinned content is evicted in the
// same transaction (see PutResult.Evicted); if that cannot make room, Put
// fails with store.ErrLimit and nothing changes. A write counts as a use of
// its content.
//
// A zero MTime means the arrival time for new content, and keeps the stored
// mtime when the content is unchanged. Mode keeps only permission bits.
func (s *Store) Put(ctx context.Context, req store.PutRequest) (store.PutResult, error) {
	hexSum, err := s.limits().Put(req)
	if err != nil {
		return store.PutResult{}, err
	}
	var res store.PutResult
	err = s.update(ctx, func(w *wtx) error {
		var err error
		res, err = w.putFile(req, hexSum, int64(len(req.Data)), func(h hash) error { return w.writeData(h, req.Data) })
		return err
	})
	if err != nil {
		return store.PutResult{}, pathErr("put", req.Path, err)
	}
	return res, nil
}

// putFile makes req.Path a present file with content sum of the given size,
// applying req's conditions and metadata, and evicts what the size limit
// requires; write stores the content's chunks if the store does not have
// them yet (nil when they are already staged).
func (w *wtx) putFile(req store.PutRequest, sum string, size int64, write func(hash) error) (store.PutResult, error) {
	p := req.Path
	if err := w.s.limits().Size(size); err != nil {
		return store.PutResult{}, err
	}
	h, err := parseHash(sum)
	if err != nil {
		return store.PutResult{}, err
	}
	stored := w.c.Stored
	if err := checkParents(w.tree, p); err != nil {
		return store.PutResult{}, err
	}
	r, err := getEntry(w.tree, p)
	if err != nil {
		return store.PutResult{}, err
	}
	if err := checkWrite(r, req.IfAbsent, req.IfRevision); err != nil {
		return store.PutResult{}, err
	}
	if err := w.parents(p); err != nil {
		return store.PutResult{}, err
	}

	var status store.PutStatus
	kind := store.EventUpdated
	next := record{}
	switch {
	case r == nil:
		status, kind = store.StatusCreated, store.EventCreated
		next = record{Kind: store.KindFile, Ino: w.nextIno(), Created: w.now}
	case !r.Present:
		status, next = store.StatusCreated, *r
	case r.SHA256 == sum:
		status, next = store.StatusUnchanged, *r
	default:
		status, next = store.StatusUpdated, *r
		next.Updates++
	}

	if status != store.StatusUnchanged {
		if err := w.ref(sum, size, write); err != nil {
			return store.PutResult{}, err
		}
		if status == store.StatusUpdated {
			if err := w.unref(r.SHA256); err != nil {
				return store.PutResult{}, err
			}
		}
		next.Size, next.SHA256, next.Present, next.Declared = size, sum, true, ""
		next.MTime = w.now
	}
	if !req.MTime.IsZero() {
		next.MTime = utc(req.MTime)
	}
	next.Mode = req.Mode & fs.ModePerm
	next.Encoding, next.Source, next.Writer = req.Encoding, req.Source, req.Writer
	next.Expires, next.Pinned = utc(req.Expires), req.Pinned

	if err := w.touch(h); err != nil {
		return store.PutResult{}, err
	}
	if status == store.StatusUnchanged && sameMeta(r, &next) {
		return store.PutResult{Status: status, Entry: r.entry(p)}, nil
	}
	next.Updated = w.now
	if err := w.put(kind, p, &next); err != nil {
		return store.PutResult{}, err
	}
	res := store.PutResult{Status: status, Entry: next.entry(p)}
	if w.c.Stored > stored {
		if res.Evicted, err = w.makeRoom(h); err != nil {
			return store.PutResult{}, err
		}
	}
	return res, nil
}

// checkWrite applies a write's conditions to the current entry r (nil when
// absent) of a file path.
func checkWrite(r *record, ifAbsent bool, ifRevision uint64) error {
	if r != nil && r.Kind == store.KindDir {
		return fmt.Errorf("%w: the path is a directory", store.ErrConflict)
	}
	if ifAbsent && r != nil {
		return store.ErrExist
	}
	if ifRevision != 0 {
		var have uint64
		if r != nil {
			have = r.Revision
		}
		if have != ifRevision {
			return fmt.Errorf("%w: expected %d, entry is at %d", store.ErrRevision, ifRevision, have)
		}
	}
	return nil
}

// sameMeta reports whether a and b agree on everything but the revision and
// update time.
func sameMeta(a, b *record) bool {
	x, y := a, b
	return x.MTime.Equal(y.MTime) && x.Expires.Equal(y.Expires) && x.Created.Equal(y.Created) &&
		x.Kind == y.Kind && x.Ino == y.Ino && x.Size == y.Size && x.SHA256 == y.SHA256 && x.Declared == y.Declared &&
		x.Mode == y.Mode && x.Encoding == y.Encoding && x.Source == y.Source &&
		x.Updates == y.Updates && x.Writer == y.Writer && x.Pinned == y.Pinned &&
		x.Present == y.Present && x.Explicit == y.Explicit
}

// utc normalizes a time for storage: UTC, no monotonic reading; zero stays
// zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Round(0)
}
