// Package vfs serves a [store.Store] as a read-only FUSE filesystem.
//
// It owns everything between the kernel and the store: the inode tree
// (directories and regular files, nothing else), attributes, reads,
// provenance extended attributes, kernel cache invalidation driven by store
// events, and mounting and unmounting, including recovery of a stale mount
// left behind by a crashed process.
//
// # Basics
//
// [Mount] mounts a store at a directory and returns a [*Server];
// [Server.Unmount] takes it down, and [Server.Wait] blocks until it is gone,
// whoever unmounted it. Every write, create, remove, rename, chmod or
// setxattr fails with EROFS. Inode numbers are the store's
// ([store.Entry.Ino]), so they are stable across restarts. Reads are served
// from a [store.Content] snapshot taken at open, one kernel-requested range
// at a time: a file is never loaded whole. A placeholder (a declared file
// whose content has not arrived, or was dropped as stale or evicted) is
// listed with its declared size. Opening it blocks while
// [Options.Fetcher] asks for the content, and reads the content once it
// arrives; the open fails with EIO when the fetch times out (or at once when
// there is no Fetcher), and with EINTR when the reader is interrupted or
// killed, which withdraws its interest.
//
// # Caching and invalidation
//
// The kernel caches entries, attributes, directory listings and file pages
// (entry and attribute timeouts default to one second; files are opened with
// FOPEN_KEEP_CACHE and directories with FOPEN_CACHE_DIR). A goroutine owned by
// the Server watches the store and, after each committed change, tells the
// kernel exactly what to forget. [Server.WaitApplied] lets a writer wait until
// its change has been turned into invalidations, so a reader that starts after
// the writer's acknowledgement never sees stale bytes.
//
// Each version of a file is its own kernel inode: the FUSE generation number
// is the entry's store revision, and an update makes the kernel look the name
// up again and get a fresh inode with an empty page cache. A process that
// opened the old version keeps reading the old version, whole and consistent,
// from its own snapshot and cache; nobody ever sees a mix of two versions. The
// inode number shown by stat stays the same across versions.
//
// # Caveats
//
// Attributes reported by stat may lag a store change by at most the
// attribute timeout when a lookup races the change. Content does not: an
// open whose snapshot is not the version the kernel looked up fails with
// ESTALE inside the kernel, which looks the name up again and retries once
// (a file that changes again within that retry gives the reader ESTALE).
//
// Unmount does not wait for other processes: if files are still open in the
// mount, it aborts the FUSE connection and detaches the mount.
//
// This package must not import mcpserver (it meets the MCP layer only through
// the store and its events), and it never writes to the store.
package vfs
