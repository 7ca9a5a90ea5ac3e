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
// Run and RunAll drive one Store value. [RunShared] states what one depot
// seen through two Store values (two hosts) must show: each other's
// writes whole and at the same revisions (after [Syncer].Sync for stores
// whose other hosts see writes a little later), conditions and limits
// holding across hosts, uploads split between hosts, one tree after
// concurrent writes. A single-process store passes it with one value as
// both hosts.
//
// It owns no production code and must not import any implementation.
package storetest
