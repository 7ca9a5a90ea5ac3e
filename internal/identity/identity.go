package identity

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strconv"

	"github.com/depotfs/depotfs/internal/grant"
)

// Method is how an identity's subject was established.
type Method string

// Methods. Only MethodCert and MethodToken rest on a credential that was
// verified; MethodOS and MethodNone are granted by where the caller is (the
// local user on stdio, a loopback HTTP client when no authentication is
// configured), never by anything the caller presents.
const (
	MethodNone  Method = ""      // no authentication: loopback HTTP without TLS or tokens, in-process calls
	MethodOS    Method = "os"    // the local OS user, on stdio
	MethodCert  Method = "cert"  // a verified client certificate (mTLS)
	MethodToken Method = "token" // a bearer token found in the tokens file
)

// Identity is who made a call: the transport it arrived on, the subject that
// transport vouches for, how that was established and what the credential
// grants. Identities are values and safe to copy; Grants is shared between
// copies and must not be modified.
type Identity struct {
	// Transport is "stdio", "http" or another transport's name. HTTP over
	// TLS is still "http".
	Transport string
	// Subject is the caller as the transport knows it: an OS user name, a
	// remote address, or for an authenticated caller its identity URI (the
	// certificate's URI SAN "depotfs://<domain>/agent/<name>", or the
	// token's "depotfs://local/token/<name>").
	Subject string

	// Method says how Subject was established.
	Method Method
	// Display is a human-readable name, the certificate's CN or the token's
	// name. It is for logs only: no decision may depend on it.
	Display string
	// Serial is the client certificate's serial number in lower-case hex,
	// when Method is MethodCert.
	Serial string
	// TokenID is the id of the bearer token, when Method is MethodToken.
	TokenID string
	// Remote is the network address of the peer, "" on stdio.
	Remote string

	// Full means the credential grants everything (every tool, every path,
	// read and write); Grants is then ignored. The server's own policy
	// (--allow, --deny) still bounds it.
	Full bool
	// Tenant is the tenant name the credential carries ("" for none): the
	// budget its limits count against (see internal/tenant).
	Tenant string
	// Grants is what the credential allows when Full is false; empty means
	// nothing (default deny). The server's own policy bounds each grant.
	// Grants from a legacy (JSON) certificate have Prefix "/": intersected
	// with the server's policy, that is "on the server's allowed prefixes".
	Grants []grant.Grant
}

// Unknown is the identity of a call whose transport set none, such as a call
// from an in-process client. It grants nothing.
var Unknown = Identity{Transport: "unknown", Subject: "unknown"}

// String returns "<transport>:<subject>", the form recorded as a store
// entry's writer, for example "stdio:alice", "http:127.0.0.1:53122" or
// "http:depotfs://example.org/agent/builder".
func (id Identity) String() string { return id.Transport + ":" + id.Subject }

// Authenticated reports whether the subject rests on a verified credential
// (a client certificate or a bearer token).
func (id Identity) Authenticated() bool {
	return id.Method == MethodCert || id.Method == MethodToken
}

// Equal reports whether id and o are the same identity with the same grants.
func (id Identity) Equal(o Identity) bool {
	return id.Transport == o.Transport && id.Subject == o.Subject && id.Method == o.Method &&
		id.Display == o.Display && id.Serial == o.Serial && id.TokenID == o.TokenID &&
		id.Remote == o.Remote && id.Full == o.Full && id.Tenant == o.Tenant && slices.Equal(id.Grants, o.Grants)
}

type contextKey struct{}

// NewContext returns a copy of ctx that carries id.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// FromContext returns the identity in ctx, or Unknown and false if no
// transport set one.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(contextKey{}).(Identity)
	if !ok {
		return Unknown, false
	}
	return id, true
}

// Stdio returns the identity of a local client on standard input and
// output: the OS user running this process, since that user started the
// client or handed it the pipes. It has full grants; a caller that narrows
// them (serve --grants) sets Full to false and Grants.
func Stdio() Identity {
	return Identity{Transport: "stdio", Subject: osUser(), Method: MethodOS, Display: osUser(), Full: true}
}

// HTTP returns the identity of an unauthenticated client that sent r: the
// host of its remote address (the port changes with every connection and
// is in Remote), with full grants, so replies, counts and the audit log
// name it the same way. An address is not a credential: depotfs uses this
// identity only for loopback HTTP when no authentication method is
// configured, where anyone who can connect is a local user.
func HTTP(r *http.Request) Identity {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return Identity{Transport: "http", Subject: host, Remote: r.RemoteAddr, Full: true}
}

// osUser returns the current user's name, falling back to $USER and then to
// the numeric uid when the user database has no entry (as in containers).
func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return "uid" + strconv.Itoa(os.Getuid())
}
