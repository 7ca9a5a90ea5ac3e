package auth

import "errors"

// Errors of certificate verification. Each is wrapped with detail; test
// with errors.Is. Each carries the short code Reason gives it for the
// audit log.
var (
	// ErrNoCertificate: the client presented no certificate where one is
	// required.
	ErrNoCertificate = reasoned("no client certificate", "no_certificate")
	// ErrUntrusted: the certificate does not chain to the configured CA, or
	// its signature is invalid.
	ErrUntrusted = reasoned("client certificate not issued by the configured CA", "untrusted")
	// ErrExpired: the certificate is outside its validity period.
	ErrExpired = reasoned("client certificate expired or not yet valid", "expired")
	// ErrUsage: the certificate is not for client authentication (no
	// ClientAuth extended key usage, a CA certificate, or a key usage that
	// does not allow signatures).
	ErrUsage = reasoned("client certificate not usable for client authentication", "bad_usage")
	// ErrSubject: the certificate does not carry exactly one URI SAN of the
	// form depotfs://<domain>/agent/<name>.
	ErrSubject = reasoned("client certificate has no valid depotfs identity", "bad_subject")
	// ErrRevoked: the certificate's serial is on the CRL.
	ErrRevoked = reasoned("client certificate revoked", "revoked")
	// ErrCRLStale: the CRL's NextUpdate has passed; every certificate is
	// refused until a fresh CRL is installed.
	ErrCRLStale = reasoned("CRL is stale", "crl_stale")
	// ErrCRLInvalid: the CRL file cannot be read, parsed or verified with
	// the CA; every certificate is refused until it can.
	ErrCRLInvalid = reasoned("CRL unusable", "crl_invalid")
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
	ErrNoCredentials = reasoned("no credentials", "no_credentials")
	// ErrTokenMalformed: the Authorization header or the token in it is not
	// in the form depotfs issues.
	ErrTokenMalformed = reasoned("malformed bearer token", "token_malformed")
	// ErrTokenUnknown: no token with that id and secret exists.
	ErrTokenUnknown = reasoned("unknown bearer token", "token_unknown")
	// ErrTokenRevoked: the token was revoked.
	ErrTokenRevoked = reasoned("bearer token revoked", "token_revoked")
	// ErrTokenExpired: the token is past its expiry.
	ErrTokenExpired = reasoned("bearer token expired", "token_expired")
	// ErrTokensUnavailable: the tokens file cannot be read or parsed;
	// every token is refused until it can.
	ErrTokensUnavailable = reasoned("tokens file unusable", "tokens_unavailable")
	// ErrAmbiguous: the request carries both a client certificate and a
	// bearer token.
	ErrAmbiguous = reasoned("both a client certificate and a bearer token", "ambiguous_credentials")
	// ErrTokenNotFound: token revoke was given an id not in the file.
	ErrTokenNotFound = errors.New("no such token")
)

// reasonError is an error above that has an audit reason code.
type reasonError struct{ msg, reason string }

func (e *reasonError) Error() string { return e.msg }

func reasoned(msg, reason string) error { return &reasonError{msg, reason} }

// Reason returns the short, stable code of an authentication error for
// the audit log ("revoked", "expired", "token_unknown", …), or "tls" for a
// failure of the TLS handshake itself (protocol version, a bad signature
// over the handshake, a client that hung up).
func Reason(err error) string {
	if e, ok := errors.AsType[*reasonError](err); ok {
		return e.reason
	}
	return "tls"
}
