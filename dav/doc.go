// Package dav serves the depot read-only over WebDAV (RFC 4918, class 1)
// below Prefix on depotfs's HTTP listener: a door onto the tree beside
// the FUSE mount (vfs) and the MCP tools (mcpserver), for clients that
// have neither (rclone, Finder's "Connect to Server", Windows, browsers).
//
// # What it owns
//
// The protocol: URL paths to depot paths (and /.snapshots/NAME/... to a
// snapshot's tree), OPTIONS, PROPFIND at depth 0 and 1 streamed as the
// entries are read, GET and HEAD of files through package httpfile
// (ranges, ETag = sha256), a plain HTML listing for a GET of a
// directory, and the refusal of every write method.
//
// # What it must not do
//
// Decide permissions or audit: every request gets its view of the tree
// from Options.Begin (in depotfs, mcpserver's Door: the caller's grants as
// the MCP tools decide them, one audit record per request), and a path
// that view refuses is answered exactly as a path that does not exist.
// It never reaches bbolt or NATS, and never holds more than one directory
// listing of a request in memory.
//
// # Caveats
//
// Depth infinity is refused (403 with DAV:propfind-finite-depth, as RFC
// 4918 section 9.1 allows): a walk of the whole depot in one response
// would be unbounded in time. There are no locks (class 1 only), so the
// clients that need LOCK to write find nothing to write anyway.
package dav
