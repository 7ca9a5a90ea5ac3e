package auth

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/depotfs/depotfs/internal/identity"
)

// Tokens checks bearer tokens against a tokens file, read again when it
// changes (one stat per check, as for the CRL). It fails closed: while the
// file is missing, unparsable or writable by group or others, every token
// is refused. It is safe for concurrent use and owns no goroutine.
type Tokens struct {
	w *watched[map[string]token]
}

// token is a record with the identity it authenticates.
type token struct {
	TokenRecord
	id identity.Identity
}

// OpenTokens reads the tokens file at path and fails if it is unusable.
func OpenTokens(path string, opts *FileOptions) (*Tokens, error) {
	w := newWatched[map[string]token](path, opts)
	w.name, w.refusal, w.unreadable = "tokens", "tokens file unusable: refusing every bearer token until it is fixed", ErrTokensUnavailable
	w.file.private = true
	w.parse = func(data []byte, _ map[string]token) (map[string]token, error) {
		_, byID, err := parseTokenFile(data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTokensUnavailable, err)
		}
		return byID, nil
	}
	w.loaded = func(byID map[string]token) []any { return []any{"count", len(byID)} }
	t := &Tokens{w: w}
	if err := t.Reload(); err != nil {
		return nil, fmt.Errorf("tokens %s: %w", path, err)
	}
	return t, nil
}

// Reload reads the tokens file now, whatever its stat says (depotfs serve
// calls it on SIGHUP), and returns why it is unusable, or nil. Until the
// next change it keeps serving what it read; an unusable file refuses
// every token, as on any other read.
func (t *Tokens) Reload() error {
	_, _, err := t.w.get(true)
	return err
}

// Authenticate returns the identity of a bearer token: Method token,
// Subject depotfs://local/token/<name> (TokenURI), Display the name, TokenID its id,
// and its grants. It refuses a token not in depotfs's form
// (ErrTokenMalformed), not in the file or with another secret
// (ErrTokenUnknown; the hashes are compared in constant time), revoked
// (ErrTokenRevoked) or expired (ErrTokenExpired), and every token while the
// file is unusable (ErrTokensUnavailable).
func (t *Tokens) Authenticate(tok string) (identity.Identity, error) {
	id, ok := tokenID(tok)
	if !ok {
		return identity.Identity{}, fmt.Errorf("%w: want %s<id>_<secret>", ErrTokenMalformed, tokenPrefix)
	}
	byID, now, err := t.w.get(false)
	if err != nil {
		return identity.Identity{}, err
	}
	rec, found := byID[id]
	if subtle.ConstantTimeCompare([]byte(hashToken(tok)), []byte(rec.SHA256)) != 1 || !found {
		return identity.Identity{}, fmt.Errorf("%w: id %s", ErrTokenUnknown, id)
	}
	if !rec.Revoked.IsZero() {
		return identity.Identity{}, fmt.Errorf("%w: id %s, revoked %s", ErrTokenRevoked, id, rec.Revoked.Format(time.RFC3339))
	}
	if !rec.Expires.IsZero() && !now.Before(rec.Expires) {
		return identity.Identity{}, fmt.Errorf("%w: id %s, expired %s", ErrTokenExpired, id, rec.Expires.Format(time.RFC3339))
	}
	return rec.id, nil
}

// tokenID returns the id inside a token of depotfs's form.
func tokenID(tok string) (string, bool) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok || len(tok) != tokenLen || rest[tokenIDLen] != '_' {
		return "", false
	}
	id, secret := rest[:tokenIDLen], rest[tokenIDLen+1:]
	if !isHex(id) || !isHex(secret) {
		return "", false
	}
	return id, true
}
