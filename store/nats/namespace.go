package nats

import (
	"context"

	"github.com/depotfs/depotfs/store"
	"github.com/depotfs/depotfs/store/internal/rules"
)

// Remove deletes the entry at req.Path (a directory with everything below
// it when req.Recursive) and the implicit parents it leaves empty, in one
// atomic batch. It is safe for concurrent use.
func (s *Store) Remove(ctx context.Context, req store.RemoveRequest) error {
	return rules.Remove(ctx, committer{s}, req)
}

// Copy makes req.To a copy of req.From in one atomic batch; copies share
// the source's content (see store.CopyRequest). It is safe for concurrent
// use.
func (s *Store) Copy(ctx context.Context, req store.CopyRequest) (store.CopyResult, error) {
	return rules.Copy(ctx, committer{s}, req)
}

// Move renames req.From to req.To in one atomic batch (see
// store.MoveRequest). It is safe for concurrent use.
func (s *Store) Move(ctx context.Context, req store.MoveRequest) (store.CopyResult, error) {
	return rules.Move(ctx, committer{s}, req)
}

// Declare records files and directories without their content, all in one
// atomic batch (see store.Declaration). It is safe for concurrent use.
func (s *Store) Declare(ctx context.Context, req store.DeclareRequest) (store.DeclareResult, error) {
	return rules.Declare(ctx, committer{s}, req)
}
