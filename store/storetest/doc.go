// Package storetest is the conformance suite for store.Store: every
// implementation runs [Run] from its own tests, the way go-fuse runs posixtest
// against every filesystem.
//
// The suite checks the contract in package store and nothing specific to
// one implementation: every method, every error sentinel, deduplication as
// seen through Entry.SHA256, that rejected calls change nothing (revision and
// tree compared before and after), chunked uploads, watch ordering and
// filtering, Content snapshots, and concurrent readers and writers (run it
// with -race). [RunAll] adds what needs a configured store ([Config]): size
// limits refusing writes with store.ErrLimit and changing nothing, LRU
// eviction (order by use, pins, shared content, placeholders left behind,
// EventEvicted, the eviction report), expiry with a fake clock, and Stats
// agreeing with a walk of the tree.
//
// It owns no production code and must not import any implementation.
package storetest
