// Package httpfile serves one version of a depot file over HTTP, for
// every door that hands files out on depotfs's listener: the resource
// links of the MCP read tools (/files/) and WebDAV (/dav/).
//
// # What it owns
//
// Serve answers GET and HEAD for a file: byte ranges (one or several),
// the entity tag (the content's SHA-256, quoted), Last-Modified and the
// conditional headers that go with them (If-None-Match, If-Range,
// If-Modified-Since), by net/http's ServeContent over the store's
// io.ReaderAt. Memory per request is one copy buffer (CopyBuffer bytes),
// whatever the file's size.
//
// Link and ParseLink spell the URL path of a resource link: a file at one
// revision, bound to the identity it was handed to (see Link).
//
// # What it must not do
//
// It decides nothing: who may read a file, and which version a request
// names, are the caller's to decide before Serve, through the same
// permission decision as the MCP tools. It never reaches bbolt or NATS.
package httpfile
