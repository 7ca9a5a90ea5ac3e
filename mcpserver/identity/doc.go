// Package identity names the caller of an MCP tool call.
//
// A transport decides who is on the other end when a request arrives (the
// stdio transport: the local OS user; streamable HTTP: the remote address)
// and puts an [Identity] in the request's context with [NewContext]. The tool
// layer reads it back with [FromContext] and records it as the writer of every
// change and in every log line.
//
// This package only names callers; it does not authenticate them. A later
// transport (client certificates, bearer tokens) replaces [HTTP] with a
// constructor that derives the subject from verified credentials; nothing
// else needs to change.
//
// The package has no state and every function is safe for concurrent use.
package identity
