// Package fetch asks agents for file content that a reader needs but the
// store does not hold: a placeholder created by a listing, a file whose
// content was dropped as stale, or one whose content was evicted.
//
// # Basics
//
// A [Broker] sits beside a [store.Store]. [Broker.Fetch] returns a file's
// content; when the store answers store.ErrNotPresent, Fetch publishes a
// [Request] for the path and blocks until the content arrives (seen through
// the store's change events), the reader gives up (its context is
// cancelled), or the broker's timeout passes. Many readers of one missing
// file share one request; the request is withdrawn when its last reader
// stops waiting, so nothing is left behind by a reader that was killed.
// The first request for a file asks for every other placeholder of its
// directory too, and [Broker.Want] asks without waiting (an O_NONBLOCK
// open): such requests are held for the timeout without a reader.
//
// The other side, the agents, learn what is wanted from [Broker.Pending]
// (a snapshot with a channel that is closed at the next change, for long
// polls) and [Broker.Notify] (a callback on every change). They answer by
// writing the content to the store in the ordinary way; the broker never
// writes to the store.
//
// # Ownership
//
// package vfs calls Fetch from a FUSE open and package mcpserver reads
// Pending; neither imports the other, and each defines the small interface
// it needs. cmd/depotfs builds the one Broker of a process and wires it to
// both. A Broker owns one goroutine per open request (the store watch that
// notices the content arriving); [Broker.Close] stops them all and releases
// every waiting reader.
//
// This package must not import vfs, mcpserver or any FUSE or MCP library.
package fetch
