package nats

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/depotfs/depotfs/store"
)

var _ store.UploadAdmin = (*Store)(nil)

// ListUploads is store.UploadAdmin.ListUploads: the uploads of every host,
// as this host has applied the tree so far. It is safe for concurrent use.
func (s *Store) ListUploads(ctx context.Context) ([]store.UploadInfo, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	s.view.mu.RLock()
	out := make([]store.UploadInfo, 0, len(s.view.st.uploads))
	for _, u := range s.view.st.uploads {
		out = append(out, u.Info(u.ID))
	}
	s.view.mu.RUnlock()
	store.SortUploads(out)
	return out, nil
}

// DropUploads is store.UploadAdmin.DropUploads, for the uploads of every
// host. An upload storing a chunk on this host is left alone; one storing
// a chunk on another host is dropped, and that chunk then fails or starts
// the upload anew (as when the upload expires). It is safe for concurrent
// use.
func (s *Store) DropUploads(ctx context.Context, ids []string, idle time.Duration) ([]store.UploadInfo, error) {
	if idle < 0 {
		return nil, fmt.Errorf("nats: drop uploads: %w: negative idle time %v", fs.ErrInvalid, idle)
	}
	all, err := s.ListUploads(ctx)
	if err != nil {
		return nil, err
	}
	// The uploads busy on this host stay locked until the commit, so no
	// chunk of theirs starts meanwhile.
	locked := map[string]bool{}
	defer func() {
		for id := range locked {
			s.uploads.Unlock(id)
		}
	}()
	wanted := map[string]bool{}
	for _, u := range all {
		if ids == nil || slices.Contains(ids, u.ID) {
			if s.uploads.TryLock(u.ID) {
				locked[u.ID] = true
				wanted[uploadKey(u.ID)] = true
			}
		}
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	var dropped []store.UploadInfo
	err = s.update(ctx, func(t *txn) error {
		dropped = dropped[:0]
		now := s.now()
		for k := range wanted {
			u := t.upload(k)
			if u == nil || now.Sub(u.Last) < idle {
				continue
			}
			dropped = append(dropped, u.Info(u.ID))
			t.setUpload(k, nil)
		}
		return nil
	}, nil)
	if err != nil {
		return nil, err
	}
	for _, u := range dropped {
		s.dropUpload(ctx, uploadKey(u.ID))
	}
	store.SortUploads(dropped)
	return dropped, nil
}
