package auth

import (
	"cmp"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
)

// Realm is the realm of depotfs's WWW-Authenticate challenge.
const Realm = "depotfs"

// Authenticator authenticates every HTTP request by its client certificate
// or its bearer token and puts the caller's identity in the request's
// context (identity.NewContext) before passing it on. It is safe for
// concurrent use once configured; its fields must not change afterwards.
type Authenticator struct {
	// Certs verifies client certificates; nil when the server has no
	// client CA.
	Certs *CertVerifier
	// Tokens checks bearer tokens; nil when the server has no tokens file.
	Tokens *Tokens
	// Sink receives every refused request; nil drops them.
	Sink EventSink
	// Now is the clock of the failure records; nil means time.Now.
	Now func() time.Time
	// Logger receives refused requests at debug level; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Authenticate returns the identity of r's sender. A request on a TLS
// connection with a client certificate is the certificate's agent,
// verified again now (so a revocation or expiry takes effect on open
// connections and resumed sessions); otherwise its Authorization: Bearer
// token decides. A request with both, or with neither, is refused. The MCP
// session id plays no part. Remote is set to r.RemoteAddr.
func (a *Authenticator) Authenticate(r *http.Request) (identity.Identity, error) {
	authz, hasToken := r.Header["Authorization"]
	var certs = peerCertificates(r)
	var id identity.Identity
	var err error
	switch {
	case len(certs) > 0 && hasToken:
		err = ErrAmbiguous
	case len(certs) > 0 && a.Certs != nil:
		id, err = a.Certs.Verify(certs)
	case hasToken && a.Tokens != nil:
		var tok string
		if tok, err = bearer(authz); err == nil {
			id, err = a.Tokens.Authenticate(tok)
		}
	default:
		err = ErrNoCredentials
	}
	if err != nil {
		return identity.Identity{}, err
	}
	id.Remote = r.RemoteAddr
	return id, nil
}

// Middleware returns next behind Authenticate. A refused request gets 401
// with WWW-Authenticate: Bearer realm="depotfs" (and error="invalid_token"
// when it carried a token), a plain-text reason, and Connection: close when
// it came with a client certificate, so that the refused certificate's
// connection does not stay open, or with a body, which is not read. The
// refusal goes to Sink.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := a.Authenticate(r)
		if err != nil {
			a.refuse(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(identity.NewContext(r.Context(), id)))
	})
}

func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, err error) {
	f := Failure{Time: time.Now(), Stage: StageRequest, Remote: r.RemoteAddr, Reason: Reason(err), Err: err}
	if a.Now != nil {
		f.Time = a.Now()
	}
	challenge := fmt.Sprintf("Bearer realm=%q", Realm)
	if ce, ok := errors.AsType[*CertError](err); ok && ce.presented() {
		f.Method, f.Subject, f.Serial = identity.MethodCert, ce.Subject, ce.Serial
	} else if _, ok := r.Header["Authorization"]; ok {
		f.Method = identity.MethodToken
		challenge += `, error="invalid_token"`
		if tok, berr := bearer(r.Header["Authorization"]); berr == nil {
			f.TokenID, _ = tokenID(tok)
		}
	}
	if a.Sink != nil {
		a.Sink.AuthFailure(r.Context(), f)
	}
	cmp.Or(a.Logger, slog.Default()).Debug("http request refused", "remote", f.Remote, "reason", f.Reason, "err", err)

	// A refused request's body is never read. Left alone, net/http would
	// read it to reuse the connection, waiting as long as the client
	// takes to send it: a client without credentials could hold a
	// connection open forever by trickling a declared body. A read
	// deadline already past makes that read fail at once and the
	// connection close; an honest client reconnects once.
	if r.ContentLength != 0 {
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	if len(peerCertificates(r)) > 0 || r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, "depotfs: authentication required: "+publicReason(err), http.StatusUnauthorized)
}

// publicReason is what a refused client is told: the cause without
// detail from the server's configuration.
func publicReason(err error) string {
	if e, ok := errors.AsType[*reasonError](err); ok {
		return e.msg
	}
	return "refused"
}

// bearer returns the token of an Authorization header: exactly one
// header, scheme Bearer (any case), one token.
func bearer(values []string) (string, error) {
	if len(values) != 1 {
		return "", fmt.Errorf("%w: %d Authorization headers", ErrTokenMalformed, len(values))
	}
	scheme, tok, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" || strings.ContainsAny(tok, " \t") {
		return "", fmt.Errorf("%w: want Authorization: Bearer <token>", ErrTokenMalformed)
	}
	return tok, nil
}

func peerCertificates(r *http.Request) []*x509.Certificate {
	if r.TLS == nil {
		return nil
	}
	return r.TLS.PeerCertificates
}
