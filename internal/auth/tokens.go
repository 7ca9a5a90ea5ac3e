package auth

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// Tokens checks bearer tokens against a tokens file, read again when it
// changes (one stat per check, as for the CRL). It fails closed: while the
// file is missing, unparsable or writable by group or others, every token
// is refused. It is safe for concurrent use and owns no goroutine.
type Tokens struct {
	now func() time.Time
	log *slog.Logger

	mu   sync.Mutex
	file watchedFile
	byID map[string]token
	err  error
}

// token is a record with its grants parsed.
type token struct {
	TokenRecord
	grants []grant.Grant
}

// OpenTokens reads the tokens file at path and fails if it is unusable.
func OpenTokens(path string, opts *FileOptions) (*Tokens, error) {
	t := &Tokens{}
	t.now, t.log, t.file = opts.watch(path)
	t.mu.Lock()
	t.reload(t.now())
	err := t.err
	t.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("tokens %s: %w", path, err)
	}
	return t, nil
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
	now := t.now()
	t.mu.Lock()
	t.reload(now)
	rec, found := t.byID[id]
	err := t.err
	t.mu.Unlock()
	if err != nil {
		return identity.Identity{}, err
	}
	if subtle.ConstantTimeCompare([]byte(hashToken(tok)), []byte(rec.SHA256)) != 1 || !found {
		return identity.Identity{}, fmt.Errorf("%w: id %s", ErrTokenUnknown, id)
	}
	if !rec.Revoked.IsZero() {
		return identity.Identity{}, fmt.Errorf("%w: id %s, revoked %s", ErrTokenRevoked, id, rec.Revoked.Format(time.RFC3339))
	}
	if !rec.Expires.IsZero() && !now.Before(rec.Expires) {
		return identity.Identity{}, fmt.Errorf("%w: id %s, expired %s", ErrTokenExpired, id, rec.Expires.Format(time.RFC3339))
	}
	return identity.Identity{
		Transport: "http",
		Subject:   tokenSubject(rec.Name),
		Method:    identity.MethodToken,
		Display:   rec.Name,
		TokenID:   rec.ID,
		Grants:    rec.grants,
	}, nil
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

// reload re-reads the file if it changed. The caller holds t.mu.
func (t *Tokens) reload(now time.Time) {
	fail := func(err error) {
		err = fmt.Errorf("%w: %w", ErrTokensUnavailable, err)
		if t.err == nil || t.err.Error() != err.Error() {
			t.log.Error("tokens file unusable: refusing every bearer token until it is fixed", "tokens", t.file.path, "err", err)
		}
		t.err = err
		t.file.started = false // re-read the file whole once it is fixed
	}
	fi, err := os.Stat(t.file.path)
	if err != nil {
		fail(err)
		return
	}
	if fi.Mode().Perm()&0o022 != 0 {
		fail(fmt.Errorf("%s is writable by group or others (mode %v): chmod 600 it", t.file.path, fi.Mode().Perm()))
		return
	}
	data, changed, err := t.file.poll(now)
	if err != nil {
		fail(err)
		return
	}
	if !changed {
		return
	}
	f, err := parseTokenFile(data)
	if err != nil {
		fail(err)
		return
	}
	byID := make(map[string]token, len(f.Tokens))
	for _, r := range f.Tokens {
		gs := make([]grant.Grant, 0, len(r.Grants))
		for _, s := range r.Grants {
			g, _ := parseGrant(s) // checked by parseTokenFile
			gs = append(gs, g)
		}
		byID[r.ID] = token{TokenRecord: r, grants: gs}
	}
	t.byID, t.err = byID, nil
	t.log.Info("tokens loaded", "tokens", t.file.path, "count", len(byID))
}

// tokenSubject is the identity of the token named name: TokenURI, also for
// records written when tokens shared the agent namespace.
func tokenSubject(name string) string {
	u, err := TokenURI(name)
	if err != nil {
		return "" // checkRecord refused such a record when the file was read
	}
	return u.String()
}
