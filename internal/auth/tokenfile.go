package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/depotfs/depotfs/internal/atomicfile"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

// TokenFileVersion is the version of the tokens file format.
const TokenFileVersion = 1

// tokenPrefix starts every token depotfs issues, so that a leaked token is
// easy to recognise (and to scan for).
const tokenPrefix = "dfs1_"

// Token layout: tokenPrefix, 16 hex digits of id, '_', 64 hex digits of a
// 256-bit secret.
const (
	tokenIDLen     = 16
	tokenSecretLen = 64
	tokenLen       = len(tokenPrefix) + tokenIDLen + 1 + tokenSecretLen
)

// TokenFile is the content of a tokens file: JSON, mode 0600, holding only
// the SHA-256 of each token, never the token.
type TokenFile struct {
	Version int           `json:"version"`
	Tokens  []TokenRecord `json:"tokens"`
}

// TokenRecord is one issued token.
type TokenRecord struct {
	ID       string    `json:"id"`               // 16 hex digits, also inside the token; not secret
	Name     string    `json:"name"`             // the agent's name
	Identity string    `json:"identity"`         // depotfs://local/agent/<name>
	SHA256   string    `json:"sha256"`           // hex SHA-256 of the whole token
	Grants   []string  `json:"grants"`           // in grant.Parse form
	Tenant   string    `json:"tenant,omitempty"` // the tenant whose limits it counts against; "": derived from the grants
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires,omitzero"` // zero: never
	Revoked  time.Time `json:"revoked,omitzero"` // zero: valid
}

// IssueToken creates a token for agent name with grants, valid until
// expires (zero for ever), records its hash in the tokens file at path
// (created 0600 if missing, its directory 0700) and returns the token,
// which is never stored and cannot be shown again. It is safe to run
// alongside other IssueToken and RevokeToken calls on the same file, in
// this or other processes.
func IssueToken(path, name string, grants []grant.Grant, expires, now time.Time) (string, TokenRecord, error) {
	return IssueTenantToken(path, name, "", grants, expires, now)
}

// IssueTenantToken is IssueToken for a token whose limits count against
// the tenant named tenant ("": the tenant its grants make; see
// internal/tenant), which CheckTenant must accept.
func IssueTenantToken(path, name, tenant string, grants []grant.Grant, expires, now time.Time) (string, TokenRecord, error) {
	u, err := TokenURI(name)
	if err != nil {
		return "", TokenRecord{}, fmt.Errorf("issue token: %w", err)
	}
	if err := CheckTenant(tenant); tenant != "" && err != nil {
		return "", TokenRecord{}, fmt.Errorf("issue token: %w", err)
	}
	rec := TokenRecord{Name: name, Identity: u.String(), Grants: []string{}, Tenant: tenant, Created: now.UTC(), Expires: expires.UTC()}
	for _, g := range grants {
		if err := checkGrant(g); err != nil {
			return "", TokenRecord{}, fmt.Errorf("issue token: %w", err)
		}
		rec.Grants = append(rec.Grants, g.String())
	}
	if len(grants) > MaxGrants {
		return "", TokenRecord{}, fmt.Errorf("issue token: %d grants, at most %d", len(grants), MaxGrants)
	}
	var id [tokenIDLen / 2]byte
	var secret [tokenSecretLen / 2]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	_, _ = rand.Read(secret[:])
	rec.ID = hex.EncodeToString(id[:])
	token := tokenPrefix + rec.ID + "_" + hex.EncodeToString(secret[:])
	rec.SHA256 = hashToken(token)
	err = updateTokenFile(path, func(f *TokenFile) error {
		f.Tokens = append(f.Tokens, rec)
		return nil
	})
	if err != nil {
		return "", TokenRecord{}, fmt.Errorf("issue token: %w", err)
	}
	return token, rec, nil
}

// RevokeToken marks the token id revoked at now; the server refuses it
// once it has noticed the file changed (at the next request). Revoking a
// revoked token keeps the first time. An unknown id is ErrTokenNotFound.
func RevokeToken(path, id string, now time.Time) error {
	err := updateTokenFile(path, func(f *TokenFile) error {
		i := slices.IndexFunc(f.Tokens, func(r TokenRecord) bool { return r.ID == id })
		if i < 0 {
			return fmt.Errorf("%w: %q", ErrTokenNotFound, id)
		}
		if f.Tokens[i].Revoked.IsZero() {
			f.Tokens[i].Revoked = now.UTC()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("revoke token: %w", err)
	}
	return nil
}

// ListTokens returns the records of the tokens file at path, or none if it
// does not exist.
func ListTokens(path string) ([]TokenRecord, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	f, _, err := parseTokenFile(data)
	if err != nil {
		return nil, fmt.Errorf("list tokens %s: %w", path, err)
	}
	return f.Tokens, nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// parseTokenFile decodes a tokens file strictly: unknown fields, an
// unknown version, invalid ids, hashes, names or grants make the whole file
// unusable. It returns the file and its tokens by id.
func parseTokenFile(data []byte) (*TokenFile, map[string]token, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f TokenFile
	if err := dec.Decode(&f); err != nil {
		return nil, nil, fmt.Errorf("tokens file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, errors.New("tokens file: data after the JSON object")
	}
	if f.Version != TokenFileVersion {
		return nil, nil, fmt.Errorf("tokens file: version %d, this depotfs reads %d", f.Version, TokenFileVersion)
	}
	byID := make(map[string]token, len(f.Tokens))
	for i, r := range f.Tokens {
		tok, err := checkRecord(r)
		if err != nil {
			return nil, nil, fmt.Errorf("tokens file: token %d: %w", i, err)
		}
		if _, ok := byID[r.ID]; ok {
			return nil, nil, fmt.Errorf("tokens file: id %s appears twice", r.ID)
		}
		byID[r.ID] = tok
	}
	return &f, byID, nil
}

// checkRecord checks a record of the tokens file and returns it with the
// identity it authenticates.
func checkRecord(r TokenRecord) (token, error) {
	if len(r.ID) != tokenIDLen || !isHex(r.ID) {
		return token{}, fmt.Errorf("id %q: want %d hex digits", r.ID, tokenIDLen)
	}
	if len(r.SHA256) != 2*sha256.Size || !isHex(r.SHA256) {
		return token{}, fmt.Errorf("id %s: sha256 %q: want %d hex digits", r.ID, r.SHA256, 2*sha256.Size)
	}
	u, err := TokenURI(r.Name)
	if err != nil {
		return token{}, fmt.Errorf("id %s: %w", r.ID, err)
	}
	// Files written before tokens had a namespace of their own record the
	// agent form; Authenticate gives either the token form.
	old, _ := AgentURI(LocalDomain, r.Name)
	if r.Identity != u.String() && r.Identity != old.String() {
		return token{}, fmt.Errorf("id %s: identity %q, want %q", r.ID, r.Identity, u)
	}
	tok := token{TokenRecord: r, id: identity.Identity{Transport: "http", Subject: u.String(), Method: identity.MethodToken,
		Display: r.Name, TokenID: r.ID, Tenant: r.Tenant, Grants: make([]grant.Grant, 0, len(r.Grants))}}
	if err := CheckTenant(r.Tenant); r.Tenant != "" && err != nil {
		return token{}, fmt.Errorf("id %s: %w", r.ID, err)
	}
	for _, s := range r.Grants {
		g, err := grant.Parse(s)
		if err == nil {
			err = checkGrant(g)
		}
		if err != nil {
			return token{}, fmt.Errorf("id %s: %w", r.ID, err)
		}
		tok.id.Grants = append(tok.id.Grants, g)
	}
	return tok, nil
}

// MaxTenant bounds the length of a tenant name in bytes.
const MaxTenant = 64

// CheckTenant fails unless name is a tenant name a tokens file may give:
// 1 to MaxTenant of a-z 0-9 . _ -, and not one of the names depotfs gives
// callers without one ("operator", "local").
func CheckTenant(name string) error {
	bad := name == "" || len(name) > MaxTenant || name == "operator" || name == "local"
	for _, c := range []byte(name) {
		bad = bad || !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
	}
	if bad {
		return fmt.Errorf("tenant %q: want 1 to %d of a-z 0-9 . _ - (and not operator or local)", name, MaxTenant)
	}
	return nil
}

func isHex(s string) bool {
	for _, c := range []byte(s) {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// updateTokenFile applies change to the tokens file at path under an
// exclusive lock (a .lock file beside it) and replaces the file
// atomically, mode 0600.
func updateTokenFile(path string, change func(*TokenFile) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Locked(path+".lock", func() error {
		f := &TokenFile{Version: TokenFileVersion, Tokens: []TokenRecord{}}
		data, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		default:
			if f, _, err = parseTokenFile(data); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		if err := change(f); err != nil {
			return err
		}
		out, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.Write(path, append(out, '\n'), 0o600)
	})
}
