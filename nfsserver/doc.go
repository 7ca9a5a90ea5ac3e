// Package nfsserver serves a store read-only over NFSv3, for places where a
// FUSE mount is impossible (containers without /dev/fuse, macOS, hosts
// that may not load FUSE): the same tree, the same inode numbers (package
// inode), the same placeholder behaviour and the same permission decisions
// (package policy) as the mount.
//
// It is a sibling of vfs and mcpserver: it reads through the store.Store
// interface and decides permissions through internal/policy; it never
// touches a store's database. The protocol (ONC RPC, XDR, MOUNT and the
// NFSv3 procedures) is github.com/willscott/go-nfs's; this package gives it
// a read-only billy filesystem over the store and its own file handles.
//
// # Handles
//
// A handle is 40 bytes: a version, a kind, a tag of the export's prefix,
// the entry's inode number (inode.Of, or inode.InSnapshot below
// /.snapshots), a generation (a snapshot's revision, else 0) and a 16-byte
// key of the path. The key's path is kept in a small table beside the
// depot (Options.HandleTable), so a handle names the same entry after a
// restart and no cache eviction ever makes it stale. A handle of a file
// version that has since been replaced reads that version while the store
// keeps it, and answers NFS3ERR_STALE once it does not.
//
// # Caveats
//
// NFSv3 has no authentication worth the name (AUTH_UNIX is a claim): what
// an export shows is decided by the operator's grants (Options.Grants),
// never by the client. Bind it to loopback or a private interface.
package nfsserver
