package tool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/tenant"
	"github.com/depotfs/depotfs/store"
)

// Snapshot names are per tenant. The store keeps one namespace (the mount
// shows every snapshot under /.snapshots), and the tools give each tenant
// its own within it: a tenant's snapshot is stored under the name it
// chose, a dot and 8 hex digits of the SHA-256 of its tenant key, and
// shown to it under the name it chose. So no tenant can take "nightly"
// from another. The operator and local tenants (the one on a server
// without authentication) have no suffix: their names are the mount's.
//
// A tenant sees only the snapshots whose prefix it may read; another's
// snapshot is as unknown to it as one never made (listing, restoring from
// it and deleting it all answer as for an unknown name). Deleting a
// snapshot it may read needs write access to its prefix and that its own
// tenant made it, unless the caller grants everything: a tenant with
// write access to /a cannot delete the operator's retention snapshot of
// /a.

// maxSnapshotName is the store's bound on a snapshot name, in bytes.
const maxSnapshotName = 64

// snapshotSuffix is what the caller's tenant adds to the names of its
// snapshots in the store; "" for the operator and local tenants.
func (g *Store) snapshotSuffix() string { return snapshotSuffix(g.c.tenant) }

// snapshotSuffix is what tenant t adds to the names of its snapshots.
func snapshotSuffix(t string) string {
	if t == tenant.Operator || t == tenant.Local {
		return ""
	}
	sum := sha256.Sum256([]byte(t))
	return "." + hex.EncodeToString(sum[:4])
}

// SnapshotName returns the name by which the caller knows the snapshot
// stored as stored: without its tenant's suffix when it is the caller's
// tenant's, else as stored.
func (g *Store) SnapshotName(stored string) string { return snapshotName(g.c.tenant, stored) }

// snapshotName is SnapshotName for a caller of tenant t.
func snapshotName(t, stored string) string {
	if sfx := snapshotSuffix(t); sfx != "" {
		if own, ok := strings.CutSuffix(stored, sfx); ok {
			return own
		}
	}
	return stored
}

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

// Snapshot returns the snapshot the caller knows as name, if the caller
// may read its prefix: its tenant's own of that name first, then one
// stored under name; an error wrapping store.ErrNotExist otherwise.
func (g *Store) Snapshot(ctx context.Context, name string) (store.Snapshot, error) {
	all, err := g.Snapshots(ctx)
	if err != nil {
		return store.Snapshot{}, err
	}
	for _, want := range []string{name + g.snapshotSuffix(), name} {
		if i := slices.IndexFunc(all, func(s store.Snapshot) bool { return s.Name == want }); i >= 0 {
			return all[i], nil
		}
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
	req.Writer = g.c.tenant
	if sfx := g.snapshotSuffix(); sfx != "" {
		if len(req.Name)+len(sfx) > maxSnapshotName {
			return store.Snapshot{}, &Refusal{Type: ErrorValidation,
				Message:     fmt.Sprintf("snapshot name %q is too long: a tenant's snapshot names have at most %d bytes", req.Name, maxSnapshotName-len(sfx)),
				Instruction: "Choose a shorter name and call again. Nothing was created."}
		}
		req.Name += sfx
	}
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
			Message:     fmt.Sprintf("your tenant (%s: every credential with your grants) holds %d snapshots, the most one tenant may hold (--max-snapshots-per-identity %d)", g.c.tenant, held, limit),
			Instruction: "Delete a snapshot you no longer need (guide_snapshot with action delete; action list shows yours), then call again. Nothing was created."}
	}
	snap, err := g.rt.st.CreateSnapshot(ctx, req)
	return snap, g.wrote(ctx, err)
}

// SnapshotsHeld returns how many snapshots the caller's tenant holds
// (created and not yet deleted or expired).
func (g *Store) SnapshotsHeld(ctx context.Context) (int, error) {
	all, err := g.rt.st.Snapshots(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, s := range all {
		if s.Writer == g.c.tenant {
			n++
		}
	}
	return n, nil
}

// DeleteSnapshot is store.Store.DeleteSnapshot for a caller allowed to
// write the snapshot's prefix, of its own tenant's snapshot or, when it
// grants everything, of any; it returns the snapshot deleted. A snapshot
// the caller may not read is unknown to it (ErrNotExist).
func (g *Store) DeleteSnapshot(ctx context.Context, name string) (store.Snapshot, error) {
	snap, err := g.Snapshot(ctx, name)
	if err != nil {
		return store.Snapshot{}, err
	}
	if err := g.admit(grant.Write, 0, snap.Prefix); err != nil {
		return store.Snapshot{}, err
	}
	if snap.Writer != g.c.tenant && !tenant.Full(g.c.who) {
		return store.Snapshot{}, &Refusal{Type: ErrorSecurity, Deny: true,
			Message:     fmt.Sprintf("snapshot %s of %s was made by another tenant: only its own tenant or an operator (a credential that grants everything) may delete it", name, snap.Prefix),
			Audit:       fmt.Sprintf("snapshot %s of %s was made by tenant %s", snap.Name, snap.Prefix, snap.Writer),
			Instruction: "Leave it; delete only the snapshots guide_snapshot list marks as yours. Nothing was deleted."}
	}
	return snap, g.wrote(ctx, g.rt.st.DeleteSnapshot(ctx, snap.Name))
}
