package bolt

import (
	"context"
	"errors"
	"fmt"

	"github.com/depotfs/depotfs/store"
)

// errVersions is what the version methods answer until this store keeps
// versions.
var errVersions = fmt.Errorf("bolt: versions and snapshots: %w", errors.ErrUnsupported)

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
