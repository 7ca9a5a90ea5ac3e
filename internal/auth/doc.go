// Package auth authenticates HTTP callers and tells mcpserver who they are
// and what their credentials grant.
//
// # Client certificates
//
// [CertVerifier] checks a client certificate against one CA and its CRL:
// the chain, the ClientAuth extended key usage, that it is no CA, its
// validity period, its revocation (the CRL file is re-read when it changes
// and refuses everything once stale), and exactly one URI SAN
// depotfs://<domain>/agent/<name>, which becomes the identity's subject.
// [Listener] runs that check in every TLS handshake, including resumed
// sessions, and [Authenticator] again on every HTTP request, so a
// certificate revoked while its connection is open stops working at the
// next request.
//
// # Grants
//
// A certificate's grants travel in a subjectDirectoryAttributes extension
// as an attribute of depotfs's own type [GrantsOID] (see
// [SubjectDirectoryAttributesOID] for why not an extension of that OID),
// DER as [EncodeGrants] documents. A missing or invalid grants attribute
// leaves the caller authenticated with no grants. Certificates of the
// pki-mcp-core prototype ([LegacyGrantsOID]) are read only when asked.
//
// # Bearer tokens
//
// For clients without certificates, [Tokens] checks Authorization: Bearer
// tokens against a tokens file that holds only their SHA-256 hashes;
// [IssueToken], [RevokeToken] and [ListTokens] maintain the file.
//
// # Failures
//
// Every refused handshake and request is reported to an [EventSink] (the
// audit log) with a stable reason code ([Reason]).
//
// The package never authorises: it names callers and their grants, and
// mcpserver enforces them. It never uses the MCP session id.
package auth
