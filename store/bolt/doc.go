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
//   - blobs: SHA-256 (32 raw bytes) → size, reference count, chunk size.
//   - chunks: SHA-256 + big-endian chunk index → up to one chunk of bytes.
//   - uploads: one nested bucket per chunked upload: its metadata and the
//     chunks received so far; once complete, only the chunk hashes, kept to
//     answer retries until the upload expires.
//   - orphans: blobs whose chunks may be unreferenced: content that lost its
//     last reference while a Content still read it, or content being
//     staged by an upload. Swept when the last reader is done, or on Open
//     after a crash.
//
// # Basics
//
// Every change to the namespace (Put, the chunk completing an upload,
// Declare, Remove, Copy, Move) is one bbolt transaction, committed with fsync before
// the call returns. Each changed entry gets its own revision; the events
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
// # Caveats
//
// bbolt allows one process per file: Open fails after about a second if
// another process holds it. Byte slices passed in are not retained; byte
// slices returned belong to the caller. The event history is in memory: a
// watcher asking for revisions from before the last Open receives
// store.EventResync.
package bolt
