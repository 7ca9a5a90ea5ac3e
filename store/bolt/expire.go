package bolt

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	return s.DropUploads(ctx, s.opts.UploadTimeout)
}

// DropUploads is ExpireUploads with idle in place of
// Options.UploadTimeout: it deletes the uploads, in progress or completed,
// that received no chunk for idle (0: every upload not busy with a chunk),
// so an operator can reclaim the room abandoned uploads hold before they
// time out. A later chunk of a dropped upload starts it anew. It is safe
// for concurrent use.
func (s *Store) DropUploads(ctx context.Context, idle time.Duration) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if idle < 0 {
		return 0, fmt.Errorf("bolt: drop uploads: %w: negative idle time %v", fs.ErrInvalid, idle)
	}
	now := s.now()
	expired := func(u *upload) bool { return now.Sub(u.Last) >= idle }
	var ids []string
	err := s.db.View(func(tx *bbolt.Tx) error {
		ups := tx.Bucket(bucketUploads)
		return ups.ForEachBucket(func(k []byte) error {
			u, err := readUpload(ups.Bucket(k))
			if err != nil {
				return fmt.Errorf("upload %q: %w", k, err)
			}
			if expired(u) {
				ids = append(ids, string(k))
			}
			return nil
		})
	})
	if err != nil {
		return 0, dbErr(err)
	}
	n := 0
	for _, id := range ids {
		if !s.uploads.TryLock(id) {
			continue
		}
		deleted := false
		err := s.update(ctx, func(w *wtx) error {
			deleted = false
			ups := w.tx.Bucket(bucketUploads)
			ub := ups.Bucket([]byte(id))
			if ub == nil {
				return nil
			}
			u, err := readUpload(ub)
			if err != nil || !expired(u) {
				return err
			}
			deleted = true
			return w.dropUpload(id, u)
		})
		s.uploads.Unlock(id)
		if err != nil {
			return n, err
		}
		if deleted {
			n++
		}
	}
	return n, nil
}

// janitor expires idle uploads until the store is closed.
func (s *Store) janitor() {
	defer s.wg.Done()
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
