package tool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// ErrNoUploadAdmin reports a store that cannot list or drop chunked
// uploads (it does not implement store.UploadAdmin).
var ErrNoUploadAdmin = errors.New("this store cannot list or drop uploads")

// uploads returns the store's uploads, after admitting the call to read
// paths.
func (g *Store) uploads(ctx context.Context, paths ...string) (store.UploadAdmin, []store.UploadInfo, error) {
	if err := g.admit(grant.Read, 0, paths...); err != nil {
		return nil, nil, err
	}
	a, ok := g.rt.st.(store.UploadAdmin)
	if !ok {
		return nil, nil, fmt.Errorf("uploads: %w", ErrNoUploadAdmin)
	}
	ups, err := a.ListUploads(ctx)
	return a, ups, err
}

// ListUploads is store.UploadAdmin.ListUploads for a caller allowed to
// read dir: the uploads of files under dir the caller may read; the
// others are left out, as if they did not exist. An empty dir names no
// directory: every upload the caller may read.
func (g *Store) ListUploads(ctx context.Context, dir string) ([]store.UploadInfo, error) {
	paths := []string{dir}
	if dir == "" {
		paths, dir = nil, depotpath.Root
	}
	_, ups, err := g.uploads(ctx, paths...)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(g.shownUploads(ups), func(u store.UploadInfo) bool {
		return !depotpath.Within(u.Path, dir) || !g.may(u.Path, grant.Read)
	}), nil
}

// DropUploads is store.UploadAdmin.DropUploads for a caller allowed to
// write dir: among the uploads of files under dir (those named by ids;
// nil: all), those idle for at least idle. An upload ids names whose file
// the caller may not write denies the whole call, before anything is
// dropped; with ids nil, such uploads are left out. Dropping frees room,
// so the disk reserve does not apply. An empty dir names no directory:
// every upload.
func (g *Store) DropUploads(ctx context.Context, dir string, ids []string, idle time.Duration) ([]store.UploadInfo, error) {
	a, all, err := g.uploads(ctx)
	if err != nil {
		return nil, err
	}
	// ids are the caller's names; the store's are matched and dropped.
	ids = g.storeIDs(ids, all)
	g.mu.Lock()
	if dir == "" {
		dir = depotpath.Root
	} else {
		err = g.c.authorize(dir, grant.Write)
	}
	var chosen []string
	for _, u := range all {
		if err != nil {
			break
		}
		if _, seen := g.shownID(u.ID); !seen {
			continue
		}
		if !depotpath.Within(u.Path, dir) || ids != nil && !slices.Contains(ids, u.ID) {
			continue
		}
		if ids == nil {
			if !g.may(u.Path, grant.Write) {
				continue
			}
		} else {
			err = g.c.authorize(u.Path, grant.Write)
		}
		chosen = append(chosen, u.ID)
	}
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(chosen) == 0 {
		return nil, nil
	}
	dropped, err := a.DropUploads(ctx, chosen, idle)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, u := range dropped {
		g.c.committed = true
		g.c.Note(u.Path)
		dropped[i].ID, _ = g.shownID(u.ID)
	}
	return dropped, err
}
