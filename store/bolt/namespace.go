package bolt

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Remove deletes the entry at req.Path in one transaction: a file, an empty
// directory, or with req.Recursive a directory and everything below it
// (deepest first, one event each); a non-empty directory without Recursive
// fails with store.ErrNotEmpty. Implicit parent directories left empty
// are removed too. Removing "/" fails with an error wrapping fs.ErrInvalid.
// It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	return rules.Remove(ctx, committer{s}, req)
}

// Copy copies the file or directory tree at req.From to req.To in one
// transaction. Copies reference the source's blobs (their reference counts
// grow); no chunk is read or written, so copying a 1 GiB file costs a few
// tree records. It is safe for concurrent use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return rules.Copy(ctx, committer{s}, req)
}

// Move renames the file or directory tree at req.From to req.To in one
// transaction: the new entries are created (parents first), then the old
// ones removed (children first), each with its event. Content is not
// touched. It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return rules.Move(ctx, committer{s}, req)
}

// Declare records req.Entries in one transaction: all apply or none do.
// Declarations apply in order, so a later one for the same path wins. It is
// safe for concurrent use.
//
// A file with no entry becomes a placeholder (Present false, SHA256 "",
// DeclaredSHA256 the declared hash). A present file whose declared Size,
// MTime or SHA256 differs from the stored one loses its content and
// becomes a placeholder with the declared size, mtime and hash (counted
// Stale); a placeholder whose declared size, mtime or hash differs takes
// them (also counted Stale; a hash not declared then is unknown). A
// directory becomes explicit. Mode 0 in a declaration leaves the stored
// mode alone. Implicit parent directories are created but not counted.
func (s *Store) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	return rules.Declare(ctx, committer{s}, req)
}
