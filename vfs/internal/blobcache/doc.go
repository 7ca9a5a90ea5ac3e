// Package blobcache keeps file contents as plain files in one directory,
// named by their SHA-256, so that the kernel can read them directly (FUSE
// passthrough) instead of asking depotfs for every page.
//
// It owns the directory and nothing else: the store stays the store of
// record. The cache is filled from a store.Content on demand, is bounded in
// bytes (least recently used blobs are deleted first) and forgets a blob
// when told the store may no longer have it. A blob file is written under a
// temporary name, checked against its hash, and renamed into place, so a
// file with a blob's name always holds exactly that blob; it never changes
// afterwards.
//
// # Across restarts
//
// After a fill, a background sealer syncs the blob to disk and writes its
// seal (<sum>.seal): the blob file's size, inode number, and change and
// modification times. Open keeps a blob only if its file still matches its
// seal exactly, and deletes every other blob (never sealed: the process
// died first; or changed since: written to, truncated, replaced, chmod-ed),
// every seal without its blob and every unfinished fill. Reading a blob's
// bytes again is not needed: whatever changes a file's bytes through the
// filesystem also moves its change time, which no system call can set back.
// A kept blob serves a reader only once the store has named its hash again
// (Get, Fill); Retain deletes the kept blobs the store no longer holds.
//
// # Caveats
//
// A blob deleted (evicted or removed) while a reader still has it open
// keeps its disk space until the reader closes it; that space is not
// counted against the bound. The seal trusts the filesystem: bytes changed
// below it (a raw write to the block device, or a write in the same clock
// tick as the seal's own reading, by a process that can write the 0400
// files of this 0700 directory) are not seen. This package must not import
// vfs or go-fuse.
package blobcache
