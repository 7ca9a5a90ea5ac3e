// Package nats is the NATS JetStream implementation of store.Store: one
// depot shared by several hosts, each running depotfs against the same
// cluster. It owns the depot's layout in JetStream, each host's copy of
// the tree, the chunk cache, and the event history that feeds Watch. It
// must not import vfs, mcpserver or any FUSE or MCP library.
//
// # Layout
//
//   - <prefix>-tree, a KV bucket (history 1): one key per entry, per
//     stored content (its size, chunk size, generation and reference and
//     pin counts), per chunked upload, per dropped content awaiting chunk
//     deletion, per retained version of an entry, per snapshot, and the
//     cumulative counters. An entry's revision is the KV
//     revision of the message that wrote it.
//   - <prefix>-chunks, a stream: one subject per chunk of at most
//     1 MiB (less when the servers' max_payload is 1 MiB:
//     <prefix>-chunks.<content id>.<generation>.<index>), and the chunks
//     of uploads in progress. Reads go to the stream leader.
//
// A content id is the content's sha256, or in a depot sealed with keyed
// addresses (every depot created with Options.Key) an HMAC of it under a
// key of the depot's, whose records then keep the sha256 only enciphered;
// the host's state and every caller name content by the plain sha256
// (see addresses).
//
// Both are created with Options.Replicas (3 by default). The servers must
// fsync every write before acknowledging it (sync_interval: always, see
// docs/several-hosts.md): with the default interval an acknowledged write
// can be lost when servers crash together.
//
// # Basics
//
// Every host applies the tree bucket's messages in order (an ordered
// consumer) to an in-memory state; Stat, ReadDir and Open read it, and
// Watch yields its changes. A write computes its change against that
// state at some revision and commits it as one JetStream atomic batch
// conditional on the stream still being at that revision (the
// Nats-Expected-Last-Sequence header): the batch is stored whole or not
// at all, and when another host committed first the write runs again on
// the newer state. Conditions (IfRevision, IfAbsent), limits, eviction,
// expiry, copy and move are therefore decided exactly as by one process.
// A write returns once the servers acknowledged its content chunks, then
// its batch, and this host has applied the batch: a host reads its own
// writes. Other hosts see a write when their consumer delivers it
// (milliseconds); Store.Sync waits for that.
//
// Content is stored once per hash; a generation chosen by the uploading
// host keeps a re-stored content apart from chunks of an earlier life
// whose deletion is pending. Dropped content keeps its chunks for
// Options.GCDelay (and while this host reads them), then any host's
// sweeper deletes them.
//
// # Caveats
//
// One change writes at most Options.MaxBatch records, which the servers'
// atomic batch limit (jetstream { limits { batch { max_msgs } } }) must
// allow: a batch of files, or a Copy, Move, Remove or Declare, with more
// fails with store.ErrBatchLimit. A change is one batch so that its
// superseded records (the bucket keeps one value per key) are replaced
// all at once or not at all.
// The LRU order of eviction is the evicting host's: writes as every host
// sees them, reads of that host only. Hits and misses are per host, since
// the store was opened. The event history is in memory: a watcher asking
// for revisions from before Open receives store.EventResync.
package nats
