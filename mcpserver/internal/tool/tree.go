package tool

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/mcpserver/internal/args"
	"github.com/depotfs/depotfs/store"
)

// The read tools of every profile read a snapshot's tree two ways, as the
// mount and WebDAV show it: a path under /.snapshots/NAME (NAME's tree
// below its prefix, as of its revision), or a depot path with the
// snapshot argument naming NAME. Both resolve here to a Place: the depot
// path read and the snapshot whose revision it is read at, checked
// against the caller's grants on that depot path (never on
// /.snapshots/...), so a snapshot gives no access the live tree does not.

// SnapshotArg is the name of the argument that reads in a snapshot.
const SnapshotArg = "snapshot"

// snapshotProperty is the snapshot argument as every input schema that
// takes it declares it, short because every client pays for it in
// tools/list (the tools' references say it in full).
var snapshotProperty = map[string]any{SnapshotArg: map[string]any{
	"type": "string", "description": "Read in this snapshot (guide_snapshot); paths under /.snapshots/NAME do too."}}

// InSnapshots returns t with the snapshot argument, which a SnapshotName
// field decodes, added to its input schema after the others: the one
// declaration of the argument every read and list tool that takes it
// sends.
func InSnapshots(t Tool) Tool {
	t.Spec = addProperties(t.Spec, snapshotProperty)
	return t
}

// Place is where a read tool reads: a depot path in the live tree or in a
// snapshot's tree. A plain value.
type Place struct {
	// Path is the clean depot path read.
	Path string
	// Snap is the snapshot read, nil for the live tree.
	Snap *store.Snapshot
	// under is the name the caller gave in a /.snapshots/NAME path, ""
	// when it named the snapshot by the argument (or none): replies then
	// name entries the way the caller did.
	under string
}

// Show returns depot path p, in the place's tree, as the caller names
// entries: below /.snapshots/NAME when it named the place that way.
func (pl Place) Show(p string) string {
	if pl.under == "" {
		return p
	}
	return pl.below(pl.under, p)
}

// MountShown returns depot path p, in the place's tree, as the mount
// shows it: below /.snapshots/NAME (the name the store keeps) for a
// snapshot's tree, else p.
func (pl Place) MountShown(p string) string {
	if pl.Snap == nil {
		return p
	}
	return pl.below(pl.Snap.Name, p)
}

// below returns p, in the snapshot's tree, below /.snapshots/name.
func (pl Place) below(name, p string) string {
	base := store.SnapshotsDir + "/" + name
	if p == pl.Snap.Prefix {
		return base
	}
	return base + "/" + strings.TrimPrefix(strings.TrimPrefix(p, pl.Snap.Prefix), "/")
}

// Revision is the revision the place is read at: the snapshot's, 0 for
// the live tree.
func (pl Place) Revision() uint64 {
	if pl.Snap == nil {
		return 0
	}
	return pl.Snap.Revision
}

// SnapshotName is the snapshot argument of a read tool, as args.Fill
// decodes it: "" when absent. A malformed name is a problem of the call.
type SnapshotName string

// ParseArg sets n from the argument s, refusing what cannot name a
// snapshot.
func (n *SnapshotName) ParseArg(s string) error {
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("%w: %s is not a snapshot name; guide_snapshot with action list shows the snapshots you may read", args.ErrInvalid, args.Quote(s))
	}
	*n = SnapshotName(s)
	return nil
}

// splitSnapshotPath splits a clean depot path at or below
// store.SnapshotsDir into the snapshot name and the path below it ("" for
// the snapshot itself); ok is false for any other path, and name is ""
// for store.SnapshotsDir itself.
func splitSnapshotPath(p string) (name, rest string, ok bool) {
	if !depotpath.Within(p, store.SnapshotsDir) {
		return "", "", false
	}
	name, rest, _ = strings.Cut(strings.TrimPrefix(strings.TrimPrefix(p, store.SnapshotsDir), "/"), "/")
	return name, rest, true
}

// Locate resolves a read tool's path argument p (a clean depot path, from
// field) and its snapshot argument name ("" when not given) to the place
// read. A path under /.snapshots/NAME reads NAME's tree; with the
// argument, p must lie in that snapshot's prefix. An unknown, expired or
// unreadable snapshot, both ways at once, or /.snapshots itself are
// refused as argument problems that say what to send instead.
func (g *Store) Locate(ctx context.Context, field, p, name string) (Place, error) {
	under, rest, viaDir := splitSnapshotPath(p)
	switch {
	case viaDir && under == "":
		return Place{}, args.Problem(field, "%s holds the snapshots, one directory each: guide_snapshot with action list names them; read one at %s/NAME/...", store.SnapshotsDir, store.SnapshotsDir)
	case viaDir && name != "":
		return Place{}, args.Problem(SnapshotArg, "give either a path under %s/NAME or the snapshot argument with a depot path, not both", store.SnapshotsDir)
	case !viaDir && name == "":
		return Place{Path: p}, nil
	case viaDir:
		name = under
	}
	snap, err := g.readableSnapshot(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotExist) {
			f := SnapshotArg
			if viaDir {
				f = field
			}
			return Place{}, args.Problem(f, "no snapshot named %s that you may read (or it has expired); guide_snapshot with action list shows the snapshots you may read", args.Quote(name))
		}
		return Place{}, &StoreError{Op: "snapshot " + name, Path: p, Err: err}
	}
	pl := Place{Path: p, Snap: &snap}
	if viaDir {
		pl.under, pl.Path = under, snap.Prefix
		if rest != "" {
			pl.Path = path.Join(snap.Prefix, rest)
		}
		return pl, nil
	}
	if !depotpath.Within(p, snap.Prefix) {
		return Place{}, args.Problem(field, "%s is not in snapshot %s, which holds %s; read a path below %s, or the whole snapshot at %s/%s", p, name, snap.Prefix, snap.Prefix, store.SnapshotsDir, name)
	}
	return pl, nil
}

// readableSnapshot is Snapshot, less a snapshot expired by the server's
// clock: the store's sweep releases it later, and until then the mount
// already shows it gone.
func (g *Store) readableSnapshot(ctx context.Context, name string) (store.Snapshot, error) {
	snap, err := g.Snapshot(ctx, name)
	if err == nil && !snap.Expires.IsZero() && !g.rt.env.Now().Before(snap.Expires) {
		return store.Snapshot{}, fmt.Errorf("snapshot %q expired: %w", name, store.ErrNotExist)
	}
	return snap, err
}

// ReadDirAt is store.Store.ReadDirAt for a caller allowed to read dir,
// less the children it may not read (as ReadDir).
func (g *Store) ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error) {
	entries, err := then(g.admit(grant.Read, 0, dir), func() ([]store.Entry, error) { return g.rt.st.ReadDirAt(ctx, dir, rev) })
	return slices.DeleteFunc(entries, func(e store.Entry) bool { return !g.may(e.Path, grant.Read) }), err
}

// Tree is the tree a place lies in, as one call reads it: the live tree
// or a snapshot's, through the guarded store. A snapshot's prefix that had
// no entry at its revision is an empty directory, as the mount shows it.
// Safe for the call's goroutines, as Store is.
type Tree struct {
	g    *Store
	snap *store.Snapshot
}

// Tree returns the tree pl lies in.
func (g *Store) Tree(pl Place) Tree { return Tree{g: g, snap: pl.Snap} }

// Stat is Store.Stat in the tree.
func (t Tree) Stat(ctx context.Context, p string) (store.Entry, error) {
	if t.snap == nil {
		return t.g.Stat(ctx, p)
	}
	e, err := t.g.StatAt(ctx, p, t.snap.Revision)
	if p == t.snap.Prefix && errors.Is(err, store.ErrNotExist) {
		return store.Entry{Path: p, Kind: store.KindDir}, nil
	}
	return e, err
}

// Open is Store.Open in the tree.
func (t Tree) Open(ctx context.Context, p string) (store.Content, error) {
	if t.snap == nil {
		return t.g.Open(ctx, p)
	}
	return t.g.OpenAt(ctx, p, t.snap.Revision)
}

// ReadDir is Store.ReadDir in the tree.
func (t Tree) ReadDir(ctx context.Context, dir string) ([]store.Entry, error) {
	if t.snap == nil {
		return t.g.ReadDir(ctx, dir)
	}
	entries, err := t.g.ReadDirAt(ctx, dir, t.snap.Revision)
	if dir == t.snap.Prefix && errors.Is(err, store.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}

// Walk is Store.Walk in the tree.
func (t Tree) Walk(ctx context.Context, dir string, recursive bool, visit func(e store.Entry) (descend bool, err error)) error {
	err := t.walkDir(ctx, dir, recursive, visit)
	if errors.Is(err, ErrStopWalk) {
		return nil
	}
	return err
}

func (t Tree) walkDir(ctx context.Context, dir string, recursive bool, visit func(e store.Entry) (bool, error)) error {
	entries, err := t.ReadDir(ctx, dir)
	if err != nil {
		return &StoreError{Op: "readdir", Path: dir, Err: err}
	}
	for _, e := range entries {
		descend, err := visit(e)
		if err != nil {
			return err
		}
		if recursive && descend && e.IsDir() {
			if err := t.walkDir(ctx, e.Path, true, visit); err != nil {
				// A directory removed while the walk runs is skipped.
				if errors.Is(err, store.ErrNotExist) {
					continue
				}
				return err
			}
		}
	}
	return nil
}
