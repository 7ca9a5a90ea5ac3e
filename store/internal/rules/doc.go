// Package rules is what a write means, written once for every store:
// the parents a write creates and the implicit ones a removal prunes,
// the conditions it checks, the records it makes, the content it
// references and releases, and the room it makes by eviction. A store
// implements Txn over its own transaction and keeps only what is its
// own: reading and writing records, assigning revisions and inodes,
// indexes, content chunks, and the commit.
//
// Every function runs inside one store transaction and may run again in
// a fresh one (bolt's group commit, nats's optimistic retries): results
// are returned, never kept. An error concerning another path than the
// request's is an *fs.PathError naming that path.
package rules
