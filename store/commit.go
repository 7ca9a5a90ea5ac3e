package store

import "context"

// CommitHook is called by a store whose write becomes durable in a step
// of its own after the write has run (bbolt's commit), when a write of
// whole files (Put, PutBatch, PutStream, PutStreams) has run in its
// transaction and that step starts: res is what the call returns if the
// step succeeds. The caller can then do what must be durable beside the
// change (its audit record) while the change commits, instead of after.
// The hook returns a function (or nil) that the store calls once the step
// has ended, with its error (nil: the change is durable), before the
// write returns; the calls of one step are made together, so the callers
// of a group commit learn its outcome at once. If the step fails the
// write returns its error, as without a hook.
//
// Both are called at most once per call, from the goroutine that
// commits, while the store's write lock is held: they must not block or
// call the store. A store that commits in one step, or any other write,
// never calls them.
type CommitHook func(res []PutResult) (done func(error))

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
