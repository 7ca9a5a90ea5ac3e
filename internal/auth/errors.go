package auth

import "errors"

// Errors of certificate verification. Each is wrapped with detail; test
// with errors.Is. Reason maps them to the short codes recorded in the audit
// log.
var (
	// ErrNoCertificate: the client presented no certificate where one is
	// required.
	ErrNoCertificate = errors.New("no client certificate")
	// ErrUntrusted: the certificate does not chain to the configured CA, or
	// its signature is invalid.
	ErrUntrusted = errors.New("client certificate not issued by the configured CA")
	// ErrExpired: the certificate is outside its validity period.
	ErrExpired = errors.New("client certificate expired or not yet valid")
	// ErrUsage: the certificate is not for client authentication (no
	// ClientAuth extended key usage, a CA certificate, or a key usage that
	// does not allow signatures).
	ErrUsage = errors.New("client certificate not usable for client authentication")
	// ErrSubject: the certificate does not carry exactly one URI SAN of the
	// form depotfs://<domain>/agent/<name>.
	ErrSubject = errors.New("client certificate has no valid depotfs identity")
	// ErrRevoked: the certificate's serial is on the CRL.
	ErrRevoked = errors.New("client certificate revoked")
	// ErrCRLStale: the CRL's NextUpdate has passed; every certificate is
	// refused until a fresh CRL is installed.
	ErrCRLStale = errors.New("CRL is stale")
	// ErrCRLInvalid: the CRL file cannot be read, parsed or verified with
	// the CA; every certificate is refused until it can.
	ErrCRLInvalid = errors.New("CRL unusable")
)

// Errors of the grants extension. A certificate with any of them is
// authenticated but grants nothing.
var (
	// ErrNoGrants: the certificate carries no grants extension.
	ErrNoGrants = errors.New("no grants extension")
	// ErrGrantsMalformed: the grants extension is not valid DER of the
	// expected structure, or a grant in it is invalid.
	ErrGrantsMalformed = errors.New("malformed grants extension")
	// ErrGrantsVersion: the grants extension has a version this depotfs
	// does not know.
	ErrGrantsVersion = errors.New("unknown grants extension version")
	// ErrGrantsTrailing: bytes follow the grants structure.
	ErrGrantsTrailing = errors.New("trailing bytes after grants extension")
)

// Errors of bearer tokens.
var (
	// ErrNoCredentials: the request carries neither a client certificate
	// nor a bearer token.
	ErrNoCredentials = errors.New("no credentials")
	// ErrTokenMalformed: the Authorization header or the token in it is not
	// in the form depotfs issues.
	ErrTokenMalformed = errors.New("malformed bearer token")
	// ErrTokenUnknown: no token with that id and secret exists.
	ErrTokenUnknown = errors.New("unknown bearer token")
	// ErrTokenRevoked: the token was revoked.
	ErrTokenRevoked = errors.New("bearer token revoked")
	// ErrTokenExpired: the token is past its expiry.
	ErrTokenExpired = errors.New("bearer token expired")
	// ErrTokensUnavailable: the tokens file cannot be read or parsed;
	// every token is refused until it can.
	ErrTokensUnavailable = errors.New("tokens file unusable")
	// ErrAmbiguous: the request carries both a client certificate and a
	// bearer token.
	ErrAmbiguous = errors.New("both a client certificate and a bearer token")
	// ErrTokenNotFound: token revoke was given an id not in the file.
	ErrTokenNotFound = errors.New("no such token")
)

// reasons maps each error above to its audit reason code.
var reasons = []struct {
	err    error
	reason string
}{
	{ErrNoCertificate, "no_certificate"},
	{ErrUntrusted, "untrusted"},
	{ErrExpired, "expired"},
	{ErrUsage, "bad_usage"},
	{ErrSubject, "bad_subject"},
	{ErrRevoked, "revoked"},
	{ErrCRLStale, "crl_stale"},
	{ErrCRLInvalid, "crl_invalid"},
	{ErrNoCredentials, "no_credentials"},
	{ErrTokenMalformed, "token_malformed"},
	{ErrTokenUnknown, "token_unknown"},
	{ErrTokenRevoked, "token_revoked"},
	{ErrTokenExpired, "token_expired"},
	{ErrTokensUnavailable, "tokens_unavailable"},
	{ErrAmbiguous, "ambiguous_credentials"},
}

// Reason returns the short, stable code of an authentication error for
// the audit log ("revoked", "expired", "token_unknown", …), or "tls" for a
// failure of the TLS handshake itself (protocol version, a bad signature
// over the handshake, a client that hung up).
func Reason(err error) string {
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "tls"
}
