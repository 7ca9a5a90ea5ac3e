package store

import (
	"context"
	"time"
)

// DefaultKeepVersions is the history a depot keeps by default: the
// superseded versions of each path kept besides the live one (the
// --keep-versions flag's default). A store's Options take their own
// KeepVersions, whose zero value keeps none.
const DefaultKeepVersions = 3

// Versions is implemented by every Store: the tree as of an earlier
// revision, a path's history, and snapshots, which hold a revision so its
// tree stays readable. A version is a record a write replaced or removed;
// it stays while something retains it: a snapshot whose revision it was
// live at, or the store's KeepVersions for its path. Implementations are
// safe for concurrent use.
type Versions interface {
	// StatAt, ReadDirAt and OpenAt are Stat, ReadDir and Open for the
	// tree as of revision rev: for each path, the newest version with
	// Revision <= rev that was not yet replaced or removed at rev. A
	// version nothing retains any more is missing: ErrNotExist.
	StatAt(ctx context.Context, path string, rev uint64) (Entry, error)
	ReadDirAt(ctx context.Context, dir string, rev uint64) ([]Entry, error)
	OpenAt(ctx context.Context, path string, rev uint64) (Content, error)

	// History returns path's versions newest first: the live entry (if
	// any), then the retained earlier versions, each with the Revision
	// that wrote it (OpenAt(path, e.Revision) opens it). A removed path
	// with retained versions still has a history. ErrNotExist when there
	// is none.
	History(ctx context.Context, path string) ([]Entry, error)

	// CreateSnapshot holds the current revision under req.Name: one
	// record, whatever the size of the tree. ErrExist when the name is
	// taken; an error wrapping fs.ErrInvalid for a bad name or prefix.
	CreateSnapshot(ctx context.Context, req SnapshotRequest) (Snapshot, error)
	// DeleteSnapshot releases the snapshot; the versions only it held are
	// dropped and their content freed in the same commit. ErrNotExist
	// when there is no snapshot of that name.
	DeleteSnapshot(ctx context.Context, name string) error
	// Snapshots lists the snapshots by name.
	Snapshots(ctx context.Context) ([]Snapshot, error)
}

// Snapshot is a revision of the depot held under a name: the tree below
// Prefix as it was at Revision stays readable, and the content it
// references is neither evicted nor expired, until the snapshot is deleted
// or expires.
type Snapshot struct {
	Name     string    // [A-Za-z0-9._-], 1–64 bytes, not "." or ".."
	Prefix   string    // clean depot path the snapshot holds; "/" for the whole tree
	Revision uint64    // the tree as of this revision
	Created  time.Time // by the store's clock
	Writer   string    // identity that created it
	Expires  time.Time // zero: kept until deleted
}

// SnapshotRequest asks for a snapshot of the tree below Prefix at the
// current revision.
type SnapshotRequest struct {
	Name    string
	Prefix  string // "" means "/"
	Writer  string
	Expires time.Time // zero: never
}

// SnapshotsDir is the depot path under which a mount shows snapshots,
// each as SnapshotsDir/NAME: stores refuse every write at or below it.
const SnapshotsDir = "/.snapshots"
