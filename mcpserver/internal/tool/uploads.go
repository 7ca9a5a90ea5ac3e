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

func (g *Store) uploadAdmin() (store.UploadAdmin, error) {
	a, ok := g.rt.st.(store.UploadAdmin)
	if !ok {
		return nil, fmt.Errorf("uploads: %w", ErrNoUploadAdmin)
	}
	return a, nil
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
	if err := g.admit(grant.Read, 0, paths...); err != nil {
		return nil, err
	}
	a, err := g.uploadAdmin()
	if err != nil {
		return nil, err
	}
	ups, err := a.ListUploads(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(g.shownUploads(ups), func(u store.UploadInfo) bool {
		_, err := g.c.perms.Check(g.c.def.name, g.c.def.group, u.Path, grant.Read)
		return !depotpath.Within(u.Path, dir) || err != nil
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
	if err := g.admit(grant.Read, 0); err != nil {
		return nil, err
	}
	a, err := g.uploadAdmin()
	if err != nil {
		return nil, err
	}
	all, err := a.ListUploads(ctx)
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
			if _, perr := g.c.perms.Check(g.c.def.name, g.c.def.group, u.Path, grant.Write); perr != nil {
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
		g.c.note(u.Path)
		dropped[i].ID, _ = g.shownID(u.ID)
	}
	return dropped, err
}
