package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
)

// PutBatch stores every request in one transaction, in order, each as Put
// would; all of them or none (see store.Store.PutBatch). What can be checked
// without the store (paths, sizes, hashes) is checked for every request
// before the transaction starts. It is safe for concurrent use.
func (s *Store) PutBatch(ctx context.Context, reqs []store.PutRequest) ([]store.PutResult, error) {
	if len(reqs) == 0 {
		return nil, s.check(ctx)
	}
	sums := make([]string, len(reqs))
	for i, req := range reqs {
		sum, err := s.limits().Put(req)
		if err != nil {
			return nil, &store.BatchError{Index: i, Path: req.Path, Err: err}
		}
		sums[i] = sum
	}
	res := make([]store.PutResult, len(reqs))
	failed := 0
	err := s.update(ctx, func(w *wtx) error {
		for i, req := range reqs {
			var err error
			if res[i], err = w.putFile(req, sums[i], int64(len(req.Data)), func(h hash) error { return w.writeData(h, req.Data) }); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, &store.BatchError{Index: failed, Path: reqs[failed].Path, Err: pathErr("put", reqs[failed].Path, err)}
	}
	return res, nil
}
