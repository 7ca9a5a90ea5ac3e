// Package pastcheck checks what a store.Store says about the past against
// a model: random puts, removes, moves, copies, restores (a copy from an
// earlier revision), snapshot creations, deletions and expiries, and
// puts sharing one commit, applied both to the store and to a small
// in-memory model of what each means (the tree after each operation, the
// versions the contract retains, the snapshots that hold); every read of
// the live tree, of a past revision, of a snapshot, of a file's history
// and of the snapshot list must equal the model's.
//
// [Run] drives one store and returns a [Report]; each implementation runs
// it from its own tests, a short run by default and a long one under
// DEPOTFS_SOAK=1, the NATS store also while its cluster's servers are
// killed and paused. Writes whose outcome a fault made unknown are
// settled, not skipped: the model keeps both outcomes until the store,
// after a barrier write, shows which one happened.
//
// It owns no production code and must not import any implementation.
package pastcheck
