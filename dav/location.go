package dav

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/store"
)

// location is what a URL names: a depot path in the live tree, in a
// snapshot's tree, or the snapshots directory itself.
type location struct {
	t    Tree
	path string // the depot path the request is about, for the record
	// url is the URL path of the location as clean, without a trailing
	// slash, and base the URL path that depot paths of its tree are
	// shown below: Prefix for the live tree, Prefix+".snapshots/NAME"
	// joined to everything below the snapshot's prefix.
	url string
	// snap is set in a snapshot's tree.
	snap *store.Snapshot
	// snapshots is set for /.snapshots itself, list to what it lists.
	snapshots bool
	list      []store.Snapshot
}

// locate resolves a request's URL path.
func (h *Handler) locate(ctx context.Context, t Tree, urlPath string) (location, error) {
	p, err := cleanURLPath(urlPath)
	if err != nil {
		return location{}, err
	}
	loc := location{t: t, path: p, url: strings.TrimSuffix(Prefix, "/") + strings.TrimSuffix(p, "/")}
	rest, ok := strings.CutPrefix(p, store.SnapshotsDir)
	if !ok || rest != "" && rest[0] != '/' {
		return loc, nil
	}
	all, err := h.snapshots(ctx, t)
	if err != nil {
		return location{}, err
	}
	if rest == "" {
		loc.snapshots, loc.list = true, all
		return loc, nil
	}
	name, below, _ := strings.Cut(rest[1:], "/")
	i := slices.IndexFunc(all, func(s store.Snapshot) bool { return s.Name == name })
	if i < 0 {
		return location{}, fmt.Errorf("snapshot %q: %w", name, store.ErrNotExist)
	}
	loc.snap = &all[i]
	loc.path = loc.snap.Prefix
	if below != "" {
		loc.path = depotpath.Join(loc.snap.Prefix, below)
		if loc.snap.Prefix == depotpath.Root {
			loc.path = "/" + below
		}
	}
	return loc, nil
}

// snapshots lists the snapshots the caller may read that have not
// expired by the handler's clock.
func (h *Handler) snapshots(ctx context.Context, t Tree) ([]store.Snapshot, error) {
	all, err := t.Snapshots(ctx)
	now := h.opts.Now()
	return slices.DeleteFunc(all, func(s store.Snapshot) bool { return !s.Expires.IsZero() && !now.Before(s.Expires) }), err
}

// href returns the URL path of entry e of loc's tree, escaped, with a
// trailing slash for a directory.
func (loc location) href(e store.Entry) string {
	var u string
	switch {
	case loc.snap != nil:
		rel := strings.TrimPrefix(strings.TrimPrefix(e.Path, loc.snap.Prefix), "/")
		u = Prefix + ".snapshots/" + loc.snap.Name
		if rel != "" {
			u += "/" + rel
		}
	default:
		u = strings.TrimSuffix(Prefix, "/") + e.Path
	}
	u = escapePath(u)
	if e.IsDir() && !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// stat returns the entry loc names.
func (loc location) stat(ctx context.Context) (store.Entry, error) {
	switch {
	case loc.snapshots:
		return store.Entry{Path: store.SnapshotsDir, Kind: store.KindDir}, nil
	case loc.snap != nil:
		e, err := loc.t.StatAt(ctx, loc.path, loc.snap.Revision)
		if err != nil && loc.path == loc.snap.Prefix && errors.Is(err, store.ErrNotExist) {
			// The prefix had no entry at the snapshot's revision: an
			// empty directory, as the mount shows it.
			return store.Entry{Path: loc.path, Kind: store.KindDir}, nil
		}
		return e, err
	default:
		return loc.t.Stat(ctx, loc.path)
	}
}

// readDir lists the directory loc names.
func (loc location) readDir(ctx context.Context) ([]store.Entry, error) {
	switch {
	case loc.snapshots:
		entries := make([]store.Entry, len(loc.list))
		for i, s := range loc.list {
			entries[i] = store.Entry{Path: store.SnapshotsDir + "/" + s.Name, Kind: store.KindDir, MTime: s.Created}
		}
		return entries, nil
	case loc.snap != nil:
		entries, err := loc.t.ReadDirAt(ctx, loc.path, loc.snap.Revision)
		if err != nil && loc.path == loc.snap.Prefix && errors.Is(err, store.ErrNotExist) {
			return nil, nil
		}
		return entries, err
	default:
		return loc.t.ReadDir(ctx, loc.path)
	}
}

// open opens the file loc names.
func (loc location) open(ctx context.Context) (store.Content, error) {
	if loc.snap != nil {
		return loc.t.OpenAt(ctx, loc.path, loc.snap.Revision)
	}
	return loc.t.Open(ctx, loc.path)
}

// escapePath percent-encodes each component of a URL path.
func escapePath(u string) string {
	parts := strings.Split(u, "/")
	for i, part := range parts {
		parts[i] = url.PathEscape(part)
	}
	return strings.Join(parts, "/")
}
