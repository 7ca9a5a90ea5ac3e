// Package mcpserver serves the depot's MCP tools and resources over a
// store.Store. The push tools are guide_cache_file (store a file, or
// content with only a filename), guide_list_directory (describe a directory
// tree before its content) and guide_read_file (answer with a file's
// content, in chunks when large); guide_pending_requests lists the files
// programs on the host are waiting for and guide_cache_stats the depot's
// statistics and limits, and the resource depotfs://pending-requests
// announces changes to the pending requests.
//
// # Tool profiles
//
// Options.Tools chooses the profiles served ([ParseProfiles] reads the
// --tools flag): guide, the push tools above, always; provider, the
// read-only file-provider tools a scanner calls (read_file,
// read_file_binary, list_directory, file_exists, get_file_stats,
// calculate_file_hash, find_files); fs, the filesystem tools (list, read,
// write, mkdir, delete, copy, move, info, search). The provider and fs
// profiles speak their source contracts' reply and error shapes instead of
// the envelope, so clients written for those contracts work unchanged.
// Every tool declares its profile and, for each path argument, whether it
// reads or writes there, and every call goes through the same wrapper,
// which logs it.
//
// # Layout
//
// This package wires the server: [Options], [New] and [Server.Close], the
// stdio and HTTP transports (transport.go), the list of tools served
// (tools.go) and the instructions. The rest lives in internal packages,
// one job each: internal/tool (the Tool type, the one spec builder, the
// pipeline every call goes through, the guarded store), internal/args
// (the strict argument decoder), internal/guide, internal/provider and
// internal/fstools (the tools of each profile, with their documents and
// examples in doc/), internal/resources (resources and subscriptions),
// internal/outbox (the writer of resource notifications on an HTTP
// notification stream), internal/pending (the pending-requests list) and
// internal/markdown (the tool reference).
//
// # Resources
//
// Every depot file is also a resource, [ResourceURI] "depot:///" plus its
// percent-encoded path, addressed by the template [ResourceTemplate]:
// resources/list pages through the files depth first
// (Options.ResourcePageSize), resources/read returns a text or base64 blob
// by detected media type (up to Options.MaxResourceBytes). mcp-go keeps no
// dynamic resource list, so the server answers resources/list from a hook
// that replaces mcp-go's (empty) page, and validates cursors, URIs and
// subscription limits in a request hook, whose errors reach the client as
// JSON-RPC "invalid request".
//
// Subscriptions: resources/subscribe on session-based protocol versions
// (notifications go to the session's GET stream while one is open, in
// order; without one, to the replies of its requests), subscriptions/listen
// on 2026-07-28 (notifications go to the listen request's own stream,
// after its acknowledgement). One watcher goroutine per Server turns store
// events into notifications/resources/updated, never blocking: a client
// whose queue is full misses the notification. [Server.Close] stops
// the watcher and ends every HTTP notification stream, so that
// http.Server.Shutdown never waits for one.
//
// # Tool reference
//
// [WriteToolDocs] renders the registered tools as Markdown (package
// internal/markdown) with the examples in each profile package's
// doc/examples, which the tests run against a real store; "depotfs tools"
// prints it and docs/tools.md embeds it. tools/list sends each tool's short
// description (doc/<tool>.md) and input schema only: the long reference
// (doc/<tool>.reference.md) and the output schema are in docs/tools.md,
// because every client pays for tools/list in its context window on every
// session (TestToolsListSize keeps the default profiles under 24 KiB).
// With Settings.OutputSchemas, tools/list also declares each output
// schema, every structured result is checked against it, and the provider
// tools whose contract returns a bare value send it as structured content
// too (an object holding it; the text is unchanged).
//
// # Files fetched on demand
//
// With Options.Requests (the fetch broker of package store/fetch), a
// program that opens a placeholder in the mount waits while agents are
// asked for the file: guide_pending_requests lists the requests (a long
// poll with wait_seconds and a cursor), and clients subscribed to the
// resource get notifications/resources/updated when the list changes,
// whether they subscribed with resources/subscribe (protocol 2025-11-25
// and before) or subscriptions/listen (2026-07-28). Answering is an
// ordinary write of the path. A caller sees only the requests for paths
// its grants, within the server's policy, let it write. [Server.Close]
// ends long polls, for shutdown.
//
// # Expiry, pins and limits
//
// ttl_seconds and pin set an entry's expiry and pin on every write;
// filename-only uploads expire after Options.UploadTTL unless pinned or
// given a ttl. A file over Options.MaxFileBytes is refused at the edge
// before anything is stored (for chunked uploads, at the first chunk whose
// total_size says so); store.ErrLimit from the store becomes a limit error.
// A write's reply reports what the store evicted to make room.
//
// # Transports
//
// [Server.ServeStdio] speaks MCP on a reader and a writer for a local client;
// [Server.Handler] is the streamable HTTP transport for remote agents. Both
// are mcp-go's; a transport puts the caller's identity (package
// internal/identity) in each request's context, and every write records it
// as the entry's writer. Over HTTP the identity comes from the
// authenticating middleware of package internal/auth (client certificate
// or bearer token) when depotfs requires authentication, and is otherwise
// the remote address, on loopback only.
//
// # The envelope
//
// Every tool replies with one [Envelope] — success, data, message,
// warnings, stats and, on failure, an error with a type, a message and an
// instruction for the agent — as structured content and as the same JSON in
// a text block, with isError set on failure. Go errors become error types in
// one place (internal/tool, Classify; the provider and fs profiles map them
// into their contracts in their errmap.go); an agent never sees host paths
// or internal detail, which go to the log instead.
//
// # Validation
//
// Arguments are decoded from the exact JSON the client sent: every argument
// is checked for presence, JSON type and format, unknown arguments are
// refused, and all problems are reported at once. Nothing touches the store
// until the whole call is valid, so a refused call changes nothing. Paths go
// through depotpath.Clean. The formats an agent must use:
//
//   - mtime: an RFC 3339 string ("2024-05-01T12:00:00Z") or a JSON number
//     of Unix seconds, between 1970 and 9999.
//   - mode: an octal string ("0644", "644", "0o644"), permission bits only.
//     JSON numbers are refused: agents write 644 meaning octal.
//   - sha256: 64 hex digits, either case; stored in lower case.
//   - content: text for encoding "utf-8"; standard base64 (padding optional,
//     line breaks ignored) for "base64".
//
// A string that carries invalid UTF-8 or an unpaired UTF-16 surrogate
// escape ("\udc80") is refused rather than silently replaced with U+FFFD.
//
// # Writes
//
// Once a call is valid, its write runs to completion even if the client
// disconnects or the transport shuts down (bounded by
// Options.CommitTimeout), and the reply is sent only after
// Options.Applied has confirmed the mount shows the change. One log line per
// call records the tool, the identity, the path, the outcome, the size and
// the hash; content is never logged.
//
// # Permissions
//
// Every call is checked against the caller's grants (identity.Identity)
// bounded by Options.Policy (package policy). Tools no grant covers are
// hidden from tools/list and refused on tools/call. Tool code reaches the
// store only through the call's guarded store (internal/tool, Call.Store),
// which checks every path argument the decoder produced and every path the
// operation touches before the store sees it; the unguarded store is an
// unexported field of the pipeline, out of reach of every tool package. A
// denial is an ErrorSecurity reply that names the rule.
//
// # Audit and rate limits
//
// Every call, allowed or denied, is one record in Options.Audit (package
// audit), written before the reply; while the audit log fails, calls are
// refused. Options.Rate limits calls and content bytes per identity
// (ErrorRateLimited with Failure.RetryAfter). [Server.IdentityStats]
// reports per-identity counts, and [Server.AuthFailure] audits refused
// authentications for the transport layer.
//
// # Concurrency
//
// A [Server] is safe for concurrent use by any number of transports and
// calls. It owns one goroutine, the store watcher, which [Server.Close]
// stops. It does not own the store and never closes it.
//
// This package must not import vfs or any FUSE library: it meets the mount
// only through the store and the Applied callback.
package mcpserver
