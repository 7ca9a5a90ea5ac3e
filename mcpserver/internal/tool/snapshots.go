package tool

import (
	"context"
	"fmt"
	"slices"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/store"
)

// Snapshots are one namespace for the whole depot (the mount shows them
// all under /.snapshots), but a tenant sees only its share of it: the
// snapshots whose prefix it may read. Another's snapshot is as unknown to
// it as one never made (listing, restoring from it and deleting it all
// answer as for an unknown name); only creating one under a name already
// taken tells it that the name is taken.

// History is store.Store.History for a caller allowed to read p.
func (g *Store) History(ctx context.Context, p string) ([]store.Entry, error) {
	return then(g.admit(grant.Read, 0, p), func() ([]store.Entry, error) { return g.rt.st.History(ctx, p) })
}

// StatAt is store.Store.StatAt for a caller allowed to read p.
func (g *Store) StatAt(ctx context.Context, p string, rev uint64) (store.Entry, error) {
	return then(g.admit(grant.Read, 0, p), func() (store.Entry, error) { return g.rt.st.StatAt(ctx, p, rev) })
}

// OpenAt is store.Store.OpenAt for a caller allowed to read p.
func (g *Store) OpenAt(ctx context.Context, p string, rev uint64) (store.Content, error) {
	return then(g.admit(grant.Read, 0, p), func() (store.Content, error) { return g.rt.st.OpenAt(ctx, p, rev) })
}

// Snapshots returns the snapshots whose prefix the caller may read, by
// name.
func (g *Store) Snapshots(ctx context.Context) ([]store.Snapshot, error) {
	all, err := then(g.admit(grant.Read, 0), func() ([]store.Snapshot, error) { return g.rt.st.Snapshots(ctx) })
	return slices.DeleteFunc(all, func(s store.Snapshot) bool { return !g.may(s.Prefix, grant.Read) }), err
}

// Snapshot returns the snapshot named name if the caller may read its
// prefix, and an error wrapping store.ErrNotExist otherwise.
func (g *Store) Snapshot(ctx context.Context, name string) (store.Snapshot, error) {
	all, err := g.Snapshots(ctx)
	if err != nil {
		return store.Snapshot{}, err
	}
	if i := slices.IndexFunc(all, func(s store.Snapshot) bool { return s.Name == name }); i >= 0 {
		return all[i], nil
	}
	return store.Snapshot{}, fmt.Errorf("snapshot %q: %w", name, store.ErrNotExist)
}

// CreateSnapshot is store.Store.CreateSnapshot for a caller allowed to
// write req.Prefix, recorded as the caller's. A caller holding
// Env.MaxSnapshotsPerIdentity snapshots already is refused (ErrorLimit):
// a snapshot holds content the store may not evict, so one tenant must
// not be able to hold the store forever.
func (g *Store) CreateSnapshot(ctx context.Context, req store.SnapshotRequest) (store.Snapshot, error) {
	if req.Prefix == "" {
		req.Prefix = depotpath.Root
	}
	if err := g.admit(grant.Write, 0, req.Prefix); err != nil {
		return store.Snapshot{}, err
	}
	req.Writer = g.c.key
	// Counting and creating are one step per server, so that concurrent
	// calls of one identity cannot pass the cap together.
	g.rt.snapshotMu.Lock()
	defer g.rt.snapshotMu.Unlock()
	held, err := g.SnapshotsHeld(ctx)
	if err != nil {
		return store.Snapshot{}, err
	}
	if limit := g.rt.env.MaxSnapshotsPerIdentity; limit > 0 && held >= limit {
		return store.Snapshot{}, &Refusal{Type: ErrorLimit,
			Message:     fmt.Sprintf("you hold %d snapshots, the most one identity may hold (--max-snapshots-per-identity %d)", held, limit),
			Instruction: "Delete a snapshot you no longer need (guide_snapshot with action delete; action list shows yours), then call again. Nothing was created."}
	}
	snap, err := g.rt.st.CreateSnapshot(ctx, req)
	return snap, g.wrote(err)
}

// SnapshotsHeld returns how many snapshots the caller holds (created and
// not yet deleted or expired).
func (g *Store) SnapshotsHeld(ctx context.Context) (int, error) {
	all, err := g.rt.st.Snapshots(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range all {
		if s.Writer == g.c.key {
			n++
		}
	}
	return n, nil
}

// DeleteSnapshot is store.Store.DeleteSnapshot for a caller allowed to
// write the snapshot's prefix; it returns the snapshot deleted. A
// snapshot the caller may not read is unknown to it (ErrNotExist).
func (g *Store) DeleteSnapshot(ctx context.Context, name string) (store.Snapshot, error) {
	snap, err := g.Snapshot(ctx, name)
	if err != nil {
		return store.Snapshot{}, err
	}
	if err := g.admit(grant.Write, 0, snap.Prefix); err != nil {
		return store.Snapshot{}, err
	}
	return snap, g.wrote(g.rt.st.DeleteSnapshot(ctx, name))
}
