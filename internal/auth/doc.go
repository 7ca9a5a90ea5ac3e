// Package auth authenticates HTTP callers and tells mcpserver who they are
// and what their credentials grant; DESIGN.md ("Identities and
// credentials") gives the reasons for its choices.
//
// [CertVerifier] checks a client certificate against one CA and its CRL
// (re-read when the file changes, refusing everything once stale); its one
// URI SAN depotfs://<domain>/agent/<name> becomes the identity's subject.
// [Listener] runs that check in every TLS handshake, resumed ones included,
// and [Authenticator] again on every HTTP request, so a revoked certificate
// stops working at the next request. The grants travel in the
// certificate as [EncodeGrants] documents (see
// [SubjectDirectoryAttributesOID]); missing or invalid grants leave the
// caller authenticated with none. Certificates of the pki-mcp-core
// prototype ([LegacyGrantsOID]) are read only when asked.
//
// For clients without certificates, [Tokens] checks Authorization: Bearer
// tokens against a file of their SHA-256 hashes, which [IssueToken],
// [RevokeToken] and [ListTokens] maintain. Every refused handshake and
// request goes to an [EventSink] (the audit log) with a stable reason code
// ([Reason]).
//
// The package never authorises: it names callers and their grants, and
// mcpserver enforces them. It never uses the MCP session id.
package auth
