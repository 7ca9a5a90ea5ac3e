// Package identity names the caller of an MCP tool call and carries what
// its credential grants.
//
// A transport decides who is on the other end when a request arrives (the
// stdio transport: the local OS user; streamable HTTP: a verified client
// certificate or bearer token, or the remote address when no authentication
// is configured) and puts an [Identity] in the request's context with
// [NewContext]. The tool layer reads it back with [FromContext], records it as
// the writer of every change and in every log line, and checks its grants.
//
// This package only names callers; it does not authenticate them. Package
// internal/auth verifies certificates and tokens and builds identities with
// [MethodCert] or [MethodToken].
//
// The package has no state and every function is safe for concurrent use.
package identity
