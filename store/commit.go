package store

import "context"

// CommitHook is called by a store whose write becomes durable in a step
// of its own after the write has run (bbolt's commit), when a write of
// whole files (Put, PutBatch, PutStream, PutStreams) has run in its
// transaction and that step starts: res is what
// the call returns if the step succeeds. The caller can then do what must
// be durable beside the change (its audit record) while the change
// commits, instead of after. If the step fails the call returns its
// error, as without a hook.
//
// It is called at most once per call, from the goroutine that commits,
// while the store's write lock is held: it must not block or call the
// store. A store that commits in one step, or any other write, never
// calls it.
type CommitHook func(res []PutResult)

type commitHookKey struct{}

// WithCommitHook returns ctx carrying h, for the write of whole files
// that receives it.
func WithCommitHook(ctx context.Context, h CommitHook) context.Context {
	return context.WithValue(ctx, commitHookKey{}, h)
}

// CommitHookOf returns the CommitHook ctx carries, or nil.
func CommitHookOf(ctx context.Context) CommitHook {
	h, _ := ctx.Value(commitHookKey{}).(CommitHook)
	return h
}
