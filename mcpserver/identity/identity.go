package identity

import (
	"context"
	"net/http"
	"os"
	"os/user"
	"strconv"
)

// Identity is who made a call: the transport it arrived on and the subject
// that transport vouches for. Identities are values and safe to copy.
type Identity struct {
	// Transport is "stdio", "http" or another transport's name.
	Transport string
	// Subject is the caller as the transport knows it: an OS user name, a
	// remote address.
	Subject string
}

// Unknown is the identity of a call whose transport set none, such as a call
// from an in-process client.
var Unknown = Identity{Transport: "unknown", Subject: "unknown"}

// String returns "<transport>:<subject>", the form recorded as a store
// entry's writer, for example "stdio:alice" or "http:127.0.0.1:53122".
func (id Identity) String() string { return id.Transport + ":" + id.Subject }

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
// client or handed it the pipes.
func Stdio() Identity {
	return Identity{Transport: "stdio", Subject: osUser()}
}

// HTTP returns the identity of the client that sent r: its remote address.
// An address is not a credential; this identity is a placeholder until HTTP
// callers authenticate.
func HTTP(r *http.Request) Identity {
	return Identity{Transport: "http", Subject: r.RemoteAddr}
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
