package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
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
	var out *rules.Copied
	err := s.update(ctx, func(w *wtx) error {
		var err error
		out, err = rules.Transfer(w, t)
		return err
	})
	if err != nil {
		return store.CopyResult{}, pathErr(t.Op(), t.From, err)
	}
	return out.Result(), nil
}
