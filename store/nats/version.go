package nats

import (
	"context"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// errVersions is what the version methods answer until this store keeps
// versions.
var errVersions = fmt.Errorf("nats: versions and snapshots: %w", errors.ErrUnsupported)

// StatAt is store.Versions.StatAt.
func (s *Store) StatAt(ctx context.Context, path string, rev uint64) (store.Entry, error) {
	return store.Entry{}, errVersions
}

// ReadDirAt is store.Versions.ReadDirAt.
func (s *Store) ReadDirAt(ctx context.Context, dir string, rev uint64) ([]store.Entry, error) {
	return nil, errVersions
}

// OpenAt is store.Versions.OpenAt.
func (s *Store) OpenAt(ctx context.Context, path string, rev uint64) (store.Content, error) {
	return nil, errVersions
}

// History is store.Versions.History.
func (s *Store) History(ctx context.Context, path string) ([]store.Entry, error) {
	return nil, errVersions
}

// CreateSnapshot is store.Versions.CreateSnapshot.
func (s *Store) CreateSnapshot(ctx context.Context, req store.SnapshotRequest) (store.Snapshot, error) {
	return store.Snapshot{}, errVersions
}

// DeleteSnapshot is store.Versions.DeleteSnapshot.
func (s *Store) DeleteSnapshot(ctx context.Context, name string) error { return errVersions }

// Snapshots is store.Versions.Snapshots.
func (s *Store) Snapshots(ctx context.Context) ([]store.Snapshot, error) { return nil, errVersions }

// Versions returns no versions: this store keeps none yet.
func (t *txn) Versions(p string) ([]rules.Version, error) { return nil, nil }

// HeldWithin returns no versions: this store keeps none yet.
func (t *txn) HeldWithin(dir string) ([]rules.Version, error) { return nil, nil }

// SetVersion fails: this store keeps no versions yet.
func (t *txn) SetVersion(v rules.Version) error { return errVersions }

// DropVersion fails: this store keeps no versions yet.
func (t *txn) DropVersion(v rules.Version) error { return errVersions }

// Snapshots returns none: this store keeps none yet.
func (t *txn) Snapshots() ([]store.Snapshot, error) { return nil, nil }

// SetSnapshot fails: this store keeps no snapshots yet.
func (t *txn) SetSnapshot(name string, s *store.Snapshot) error { return errVersions }

// Revision is the revision of the last entry change the host applied.
func (t *txn) Revision() uint64 { return t.st.entryRev }
