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
// setxattr fails with EROFS. A directory's inode number is the store's
// ([store.Entry.Ino]) and a file's is its version's ([Ino]), so both are
// stable across restarts. Reads are served
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
// The kernel caches names, missing names, attributes, directory listings
// and file pages for as long as nothing changes ([DefaultTimeout] is a day;
// files are opened with FOPEN_KEEP_CACHE and FOPEN_NOFLUSH, directories with
// FOPEN_CACHE_DIR, and READDIRPLUS gives ls -l names and attributes in one
// pass). A goroutine owned by the Server watches the store and, after each
// committed change, tells the kernel exactly what to forget: the name, the
// inode's attributes and pages, the parent's listing and attributes (its
// mtime moved). [Server.WaitApplied] lets a writer wait until its change has
// been turned into invalidations, so a reader that starts after the
// writer's acknowledgement never sees stale bytes. When the store reports
// lost events (a resync), everything the kernel knows is invalidated,
// including the names it remembers as missing. Another host's writer does
// not wait for this host's invalidations: with [Options.Shared] the kernel
// does not remember missing names, and an open reads the newest version
// even when the kernel still had the older one's name.
//
// Each version of a file is its own kernel inode with its own inode number
// ([Ino]): an update looks like an atomic rename-replace on a local
// filesystem, which tail -F follows, and the old inode's link count drops
// to 0. A process that opened the old version keeps reading the old
// version, whole and consistent, from its own snapshot and cache; nobody
// ever sees a mix of two versions. A version with the same content (a
// change of mode or mtime) or one that extends the content (an append)
// keeps the inode instead, which grows: tail -F prints only what was
// added. An open that races an update (the kernel still held the old
// version's name) reads the version the opener saw when it is still at
// hand, and always gets the attributes of the version it reads.
//
// # Passthrough
//
// With [Options.Passthrough], files of at least [PassthroughMinSize] are
// served from a bounded, content-addressed cache of blob files: the kernel
// reads them directly (FUSE passthrough), at the speed of a local file.
// A blob is copied in from the store after each write (or on first open),
// and deleted when the file that used it changes or goes, or to make room.
//
// # Caveats
//
// inotify and fanotify see nothing: the kernel does not report changes made
// by a FUSE server. Programs that must learn of changes should subscribe to
// MCP resources, or poll (tail -F does).
//
// Unmount does not wait for other processes: if files are still open in the
// mount, it aborts the FUSE connection and detaches the mount.
//
// The provenance extended attributes are read by name; listxattr lists
// none, so that programs copying extended attributes (cp -a) leave them.
//
// This package must not import mcpserver (it meets the MCP layer only through
// the store and its events), and it never writes to the store.
package vfs
