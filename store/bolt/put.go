package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/entryrec"
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
	if err := entryrec.CheckWrite(r, req.IfAbsent, req.IfRevision); err != nil {
		return store.PutResult{}, err
	}
	if err := w.parents(p); err != nil {
		return store.PutResult{}, err
	}

	next, status, kind := entryrec.Put(r, req, sum, size, w.now)
	if r == nil {
		next.Ino = w.nextIno()
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
	}
	if err := w.touch(h); err != nil {
		return store.PutResult{}, err
	}
	if status == store.StatusUnchanged && entryrec.SameMeta(r, &next) {
		return store.PutResult{Status: status, Entry: r.Entry(p)}, nil
	}
	next.Updated = w.now
	if err := w.put(kind, p, &next); err != nil {
		return store.PutResult{}, err
	}
	res := store.PutResult{Status: status, Entry: next.Entry(p)}
	if w.c.Stored > stored {
		if res.Evicted, err = w.makeRoom(h); err != nil {
			return store.PutResult{}, err
		}
	}
	return res, nil
}
