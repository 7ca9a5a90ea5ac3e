// Package blobcache keeps file contents as plain files in one directory,
// named by their SHA-256, so that the kernel can read them directly (FUSE
// passthrough) instead of asking depotfs for every page.
//
// It owns the directory and nothing else: the store stays the store of
// record. The cache starts empty (Open deletes whatever an earlier run
// left), is filled from a store.Content on demand, is bounded in bytes
// (least recently used blobs are deleted first) and forgets a blob when
// told the store may no longer have it. A blob file is written under a
// temporary name, checked against its hash, and renamed into place, so a
// file with a blob's name always holds exactly that blob; it never changes
// afterwards.
//
// # Caveats
//
// A blob deleted (evicted or removed) while a reader still has it open
// keeps its disk space until the reader closes it; that space is not
// counted against the bound. This package must not import vfs or go-fuse.
package blobcache
