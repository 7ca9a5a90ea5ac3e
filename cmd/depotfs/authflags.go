package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/depotfs/depotfs/internal/auth"
)

// authConfig is how "depotfs serve" authenticates HTTP callers.
type authConfig struct {
	tlsCert, tlsKey string
	clientCA, crl   string
	tokens          string
	tokensSet       bool // --tokens given explicitly
	tokensOn        bool // tokens enabled: --tokens given, or the default file exists
	legacy          bool
	grants          grantsFlag
	stdio           bool // serve --stdio: nothing here applies
}

func (c *authConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate `file` of the HTTPS listener (with --tls-key; 'depotfs ca server-cert' makes one); serves TLS 1.3 only")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key `file` of --tls-cert")
	fs.StringVar(&c.clientCA, "client-ca", "", "PEM `file` of the one CA whose client certificates authenticate agents (mTLS; needs --tls-cert and --crl)")
	fs.StringVar(&c.crl, "crl", "", "CRL `file` of --client-ca, re-read when it changes; a stale CRL refuses every certificate")
	fs.StringVar(&c.tokens, "tokens", "", "bearer tokens `file` ('depotfs token issue'); default tokens.json beside --db, used if it exists")
	fs.BoolVar(&c.legacy, "accept-legacy-grants", false, "also read grants from pki-mcp-core certificates (JSON in OID 1.3.6.1.4.1.99999.1), as tool grants on the --allow prefixes")
	fs.Var(&c.grants, "grants", "narrow the grants of unauthenticated local callers (stdio, and loopback HTTP without TLS or tokens) to these `TOOL:PREFIX:ACCESS,...`; default all")
}

// resolve checks the flags together, after parsing, and decides whether
// tokens are on. db is the database path, beside which the default tokens
// file lives.
func (c *authConfig) resolve(fs *flag.FlagSet, db string, stdio bool) error {
	c.stdio = stdio
	fs.Visit(func(f *flag.Flag) { c.tokensSet = c.tokensSet || f.Name == "tokens" })
	switch {
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return errors.New("--tls-cert and --tls-key go together")
	case c.clientCA != "" && c.tlsCert == "":
		return errors.New("--client-ca needs --tls-cert and --tls-key: client certificates are part of the TLS handshake")
	case c.clientCA != "" && c.crl == "":
		return errors.New("--client-ca needs --crl: without a CRL no certificate could ever be revoked ('depotfs ca init' writes one)")
	case c.crl != "" && c.clientCA == "":
		return errors.New("--crl needs --client-ca, the CA that signs it")
	case c.legacy && c.clientCA == "":
		return errors.New("--accept-legacy-grants needs --client-ca")
	case stdio && (c.tlsCert != "" || c.tokensSet):
		return errors.New("--tls-cert, --client-ca and --tokens apply to HTTP, not --stdio")
	}
	if c.tokensSet {
		c.tokensOn = true
	} else if !stdio {
		c.tokens = defaultTokensFile(db)
		_, err := os.Stat(c.tokens)
		c.tokensOn = err == nil
	}
	return nil
}

// methods names the authentication methods for the ready line.
func (c *authConfig) methods() string {
	var m []string
	if c.clientCA != "" {
		m = append(m, "mtls")
	}
	if c.tokensOn {
		m = append(m, "tokens")
	}
	return cmp.Or(strings.Join(m, "+"), "none")
}

// checkListen refuses a non-loopback listen address unless callers must
// authenticate (client certificates, or bearer tokens over TLS) or
// insecure is set. Bearer tokens without TLS would cross the network in
// clear text, so they do not count.
func checkListen(addr string, insecure bool, a *authConfig) error {
	loopback, err := isLoopback("--listen", addr)
	switch {
	case err != nil:
		return err
	case loopback, insecure, a.clientCA != "", a.tokensOn && a.tlsCert != "":
		return nil
	case a.tokensOn:
		return fmt.Errorf("--listen %q is not a loopback address and bearer tokens would cross the network in clear text: "+
			"add --tls-cert and --tls-key, listen on 127.0.0.1 behind a TLS proxy, or pass --insecure if that is really intended", addr)
	}
	return fmt.Errorf("--listen %q is not a loopback address and no authentication is configured: "+
		"anyone who can reach it could write to the depot; configure client certificates (--tls-cert, --tls-key, --client-ca, --crl) "+
		"or bearer tokens ('depotfs token issue', with --tls-cert), listen on 127.0.0.1, or pass --insecure if that is really intended", addr)
}

// isLoopback reports whether the listen address addr of flag is on the
// loopback interface.
func isLoopback(flag, addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("%s %q: %w", flag, addr, err)
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback(), nil
}

// httpAuth is what serve puts in front of the MCP handler.
type httpAuth struct {
	tls    *tls.Config         // nil: plain HTTP
	authn  *auth.Authenticator // nil: no authentication (loopback only)
	tokens *auth.Tokens        // nil: no bearer tokens; SIGHUP reloads it
	crl    *auth.CRL           // nil: no client CA; SIGHUP reloads it
}

// setup loads certificates, CRL and tokens; it does nothing for stdio. The
// caller sets the Authenticator's Sink once the audit log exists.
func (c *authConfig) setup(log *slog.Logger) (*httpAuth, error) {
	h := &httpAuth{}
	if c.stdio {
		return h, nil
	}
	var certs *auth.CertVerifier
	if c.clientCA != "" {
		caCert, err := auth.LoadCACert(c.clientCA)
		if err != nil {
			return nil, err
		}
		if h.crl, err = auth.OpenCRL(c.crl, caCert, &auth.FileOptions{Logger: log}); err != nil {
			return nil, err
		}
		if certs, err = auth.NewCertVerifier(caCert, h.crl, &auth.CertOptions{AcceptLegacyGrants: c.legacy, Logger: log}); err != nil {
			return nil, err
		}
	}
	if c.tokensOn {
		var err error
		if h.tokens, err = auth.OpenTokens(c.tokens, &auth.FileOptions{Logger: log}); err != nil {
			return nil, err
		}
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		h.tls = auth.ServerConfig(cert, certs, !c.tokensOn, nil)
	}
	if c.clientCA != "" || c.tokensOn { // callers must authenticate
		h.authn = &auth.Authenticator{Certs: certs, Tokens: h.tokens, Logger: log}
	}
	return h, nil
}

// logSink writes refused authentications to the log, so an operator
// sees handshake failures that never reach an MCP call. serve puts it
// behind auth.Bursts: one line per burst from an address, with the count.
func logSink(log *slog.Logger) sinkFunc {
	return func(ctx context.Context, f auth.Failure) {
		log.LogAttrs(ctx, slog.LevelWarn, "authentication refused",
			slog.String("stage", string(f.Stage)), slog.String("remote", f.Remote), slog.String("reason", f.Reason),
			slog.String("method", string(f.Method)), slog.String("subject", f.Subject), slog.String("serial", f.Serial),
			slog.String("token_id", f.TokenID), slog.Bool("resumed", f.Resumed), slog.Int("count", max(f.Count, 1)), slog.Any("err", f.Err))
	}
}

// sinkFunc is a function as an auth.EventSink.
type sinkFunc func(context.Context, auth.Failure)

func (s sinkFunc) AuthFailure(ctx context.Context, f auth.Failure) { s(ctx, f) }

// sinks sends each failure to every sink in turn.
type sinks []auth.EventSink

func (s sinks) AuthFailure(ctx context.Context, f auth.Failure) {
	for _, x := range s {
		x.AuthFailure(ctx, f)
	}
}
