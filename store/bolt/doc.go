// Package bolt is the embedded implementation of store.Store, in one bbolt
// database file. It owns the file's layout, content deduplication and
// garbage collection, uploads in progress, and the in-memory event history
// that feeds Watch. It must not import vfs, mcpserver or any FUSE or MCP
// library.
//
// # Layout
//
// Buckets in the file:
//
//   - meta: schema version, revision counter, inode counter.
//   - tree: one key per entry, parent directory + NUL + name, so a
//     directory listing is one prefix scan and Stat is one Get. The root
//     "/" is not stored: it always exists, with inode store.RootIno.
//   - blobs: SHA-256 (32 raw bytes) → size, reference count, chunk size,
//     pinned reference count, last use. In a sealed store this hash, here
//     and in every bucket below that names content, is the keyed address
//     of the content's SHA-256 (sealer.address), and the records that keep
//     the plain hash keep it enciphered or sealed (see sealing.go).
//   - chunks: SHA-256 + big-endian chunk index → up to one chunk of bytes.
//   - uploads: one nested bucket per chunked upload: its metadata and the
//     chunks received so far; once complete, only the chunk hashes, kept to
//     answer retries until the upload expires.
//   - orphans: blobs whose chunks may be unreferenced: content that lost its
//     last reference while a Content still read it, or content being
//     staged by an upload. Swept when the last reader is done, or on Open
//     after a crash.
//   - versions: the retained versions of entries (records a write
//     replaced or removed, kept for a snapshot or a path's history), keyed
//     tree key + NUL + revision; snapshots: one JSON record per snapshot.
//   - lru, history-lru, refs, expiry: indexes derived from the tree, the
//     versions and the blobs, kept in step by the transactions that change
//     them: the evictable blobs by last use (those only versions use in
//     history-lru, evicted first), the files and versions using each
//     blob, the unpinned files by expiry time. Meta holds the counters Stats reports. Open derives all of
//     them, and the blobs' pin counts, when it upgrades a schema 1 file.
//
// # Basics
//
// Every change to the namespace (Put, the chunk completing an upload,
// Declare, Remove, Copy, Move) is atomic and committed with fsync before
// the call returns. Concurrent changes share one bbolt transaction and one
// fsync (group commit: the writer that gets the lock commits everything
// queued meanwhile), each applied whole or not at all. Each changed entry gets its own revision; the events
// are published to watchers only after the commit. An upload's content is
// copied into blob chunks by bounded transactions before the one that makes
// the file visible, so no transaction holds a whole large file.
//
// Copy and Move write tree records only: a copy takes a reference on the
// source's blob, so copying a large file or tree writes no content.
//
// Content is read through short read transactions that copy only the
// chunks a ReadAt needs. A Content keeps its blob alive until closed.
//
// # Limits, eviction and expiry
//
// Options.MaxFileBytes and Options.MaxStoreBytes bound one file and the
// stored content, each distinct blob counted once. A write that would take
// the store over MaxStoreBytes evicts least recently used blobs in its own
// transaction, so the write and its evictions commit together or not at
// all; a blob used by a pinned file is never evicted, and a blob shared by
// several files is evicted whole. An evicted file stays in the tree as a
// placeholder: Present false, SHA256 "" (as for any placeholder: the
// content is not known to be coming back the same), size, mtime, mode,
// provenance, pin and expiry kept, at a new revision with an
// store.EventEvicted. Writing content to it again reports
// store.StatusCreated.
//
// The LRU order is a store-wide sequence of uses, not a clock: a write, or
// an Open of a present file, is a use. Open records it in memory only; the
// next write transaction persists it (as do the sweeper every
// Options.FlushInterval and Close), so after a crash the order is that of
// a few seconds earlier. Hits and misses are counted the same way.
//
// Uploads in progress hold their chunks outside the stored content: they
// do not count in Stats.StoredBytes but count against MaxStoreBytes, and
// a chunk that would cross it evicts as a write does (see
// Store.PutChunk). While an upload completes,
// its content briefly exists twice (chunks and blob), and content evicted
// while a Content reads it stays on disk until that Content is closed.
//
// A sweeper goroutine removes expired, unpinned files every
// Options.SweepInterval (see Store.ExpireEntries).
//
// # Caveats
//
// bbolt allows one process per file: Open fails after about a second if
// another process holds it. Byte slices passed in are not retained; byte
// slices returned belong to the caller. The event history is in memory: a
// watcher asking for revisions from before the last Open receives
// store.EventResync.
package bolt
