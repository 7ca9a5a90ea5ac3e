package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
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
	return rules.One(s.PutBatch(ctx, []store.PutRequest{req}))
}

// PutBatch stores every request in one transaction, in order, each as Put
// would; all of them or none (see store.Store.PutBatch). What can be checked
// without the store (paths, sizes, hashes) is checked for every request
// before the transaction starts. It is safe for concurrent use.
func (s *Store) PutBatch(ctx context.Context, reqs []store.PutRequest) ([]store.PutResult, error) {
	if len(reqs) == 0 {
		return nil, s.check(ctx)
	}
	files := make([]streamFile, len(reqs))
	for i, req := range reqs {
		sum, err := s.limits().Put(req)
		if err != nil {
			return nil, &store.BatchError{Index: i, Path: req.Path, Err: err}
		}
		files[i] = streamFile{req: req, data: req.Data, sum: sum}
	}
	return s.putFiles(ctx, files)
}
