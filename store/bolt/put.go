package bolt

import (
	"context"

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
