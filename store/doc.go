// Package store owns the depot's namespace and content: entries (files and
// directories) addressed by clean depot paths, content addressed by SHA-256,
// uploads in progress, and the stream of change events.
//
// The [Store] interface is what vfs and mcpserver program against; package
// store/bolt is its embedded bbolt implementation, store/nats the one on a
// NATS JetStream cluster that several hosts share, and store/storetest is
// the conformance suite every implementation must pass.
//
// # Revisions and events
//
// Every change gets a store-wide revision, strictly increasing. [Store.Watch]
// yields changes in revision order; a subscriber that asks for history older
// than the store keeps gets an [EventResync] instead of blocking writers.
//
// # Versions and snapshots
//
// A record a change replaces or removes stays readable as a version while
// something retains it: a [Snapshot], which holds the tree below its
// prefix as of one revision (creating one writes one record, whatever the
// tree's size), or the path's history (the store's KeepVersions). See
// [Versions]: the tree at a revision, a file's history, and restoring a
// version with Copy and [CopyRequest].FromRevision. The revisions of
// restored files continue upward: a revision is never reused.
//
// # Paths
//
// Every path passed to a Store must already be clean (see package depotpath);
// a Store rejects unclean paths with an error wrapping depotpath.ErrInvalid
// rather than guessing.
//
// # Caveats
//
// Byte slices passed to a Store (PutRequest.Data, Chunk.Data) are not retained
// after the call returns. Byte slices returned by a Store belong to the caller.
// This package must not import vfs, mcpserver or any FUSE or MCP library.
package store
