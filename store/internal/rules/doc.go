// Package rules is what a write means, written once for every store:
// the parents a write creates and the implicit ones a removal prunes,
// the conditions it checks, the records it makes, the content it
// references and releases, and the room it makes by eviction. A store
// implements Txn over its own transaction and keeps only what is its
// own: reading and writing records, assigning revisions and inodes,
// indexes, content chunks, and the commit.
//
// Writes (Remove, Copy, Move, Declare, CreateSnapshot, DeleteSnapshot)
// are whole calls over a store's Committer, which the store embeds; Put,
// Expire, Evict and CheckParents run inside a transaction the store
// already has (batches, streams, uploads, sweeps).
// Every rule may run again in a fresh transaction (bolt's group commit,
// nats's optimistic retries): results are returned, never kept, and read
// their entries after the commit. An error concerning another path than
// the request's is an *fs.PathError naming that path.
package rules
