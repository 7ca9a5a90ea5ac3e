package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/depotfs/depotfs/store"
	bbolt "go.etcd.io/bbolt"
)

// ExpireUploads deletes the uploads that received no chunk for
// Options.UploadTimeout, by the store's clock, and returns how many it
// deleted; their chunks stop counting against Options.MaxStoreBytes.
// Uploads busy with a chunk are left alone. The store's janitor calls it
// periodically; it is exported so tests (with Options.Now) and operators
// can run it at will. It is safe for concurrent use.
func (s *Store) ExpireUploads(ctx context.Context) (int, error) {
	dropped, err := s.DropUploads(ctx, nil, s.opts.UploadTimeout)
	return len(dropped), err
}

var _ store.UploadAdmin = (*Store)(nil)

// ListUploads is store.UploadAdmin.ListUploads. It is safe for concurrent
// use.
func (s *Store) ListUploads(ctx context.Context) ([]store.UploadInfo, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var out []store.UploadInfo
	err := s.db.View(func(tx *bbolt.Tx) error {
		ups := tx.Bucket(bucketUploads)
		return ups.ForEachBucket(func(k []byte) error {
			u, err := s.sealer.readUpload(ups.Bucket(k), string(k))
			if err != nil {
				return fmt.Errorf("upload %q: %w", k, err)
			}
			out = append(out, u.Info(string(k)))
			return nil
		})
	})
	if err != nil {
		return nil, dbErr(err)
	}
	store.SortUploads(out)
	return out, nil
}

// DropUploads is store.UploadAdmin.DropUploads: ExpireUploads with idle in
// place of Options.UploadTimeout, for the uploads ids names (nil: all),
// so an operator can reclaim the room abandoned uploads hold before they
// time out. It is safe for concurrent use.
func (s *Store) DropUploads(ctx context.Context, ids []string, idle time.Duration) ([]store.UploadInfo, error) {
	if idle < 0 {
		return nil, fmt.Errorf("bolt: drop uploads: %w: negative idle time %v", fs.ErrInvalid, idle)
	}
	all, err := s.ListUploads(ctx)
	if err != nil {
		return nil, err
	}
	now := s.now()
	expired := func(u *upload) bool { return now.Sub(u.Last) >= idle }
	var dropped []store.UploadInfo
	for _, info := range all {
		if ids != nil && !slices.Contains(ids, info.ID) || now.Sub(info.Last) < idle {
			continue
		}
		id := info.ID
		if !s.uploads.TryLock(id) {
			continue
		}
		var gone *store.UploadInfo
		err := s.update(ctx, func(w *wtx) error {
			gone = nil
			ub := w.tx.Bucket(bucketUploads).Bucket([]byte(id))
			if ub == nil {
				return nil
			}
			u, err := w.s.sealer.readUpload(ub, id)
			if err != nil || !expired(u) {
				return err
			}
			info := u.Info(id)
			gone = &info
			return w.dropUpload(id, u)
		})
		s.uploads.Unlock(id)
		if err != nil {
			return dropped, err
		}
		if gone != nil {
			dropped = append(dropped, *gone)
		}
	}
	return dropped, nil
}

// janitor expires idle uploads until the store is closed.
func (s *Store) janitor() {
	every := min(max(s.opts.UploadTimeout/4, time.Second), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		n, err := s.ExpireUploads(context.Background())
		switch {
		case err != nil && !errors.Is(err, store.ErrClosed):
			s.log.Error("bolt: expiring uploads", "err", err)
		case n > 0:
			s.log.Info("bolt: expired idle uploads", "count", n)
		}
	}
}
