package auth_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
	"github.com/depotfs/depotfs/internal/identity"
)

func TestTokens(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "state", "tokens.json")
	gs := []grant.Grant{{Tool: "guide", Prefix: "/ci", Access: grant.ReadWrite}}
	tokA, recA, err := auth.IssueToken(path, "ci", gs, clk.Now().Add(24*time.Hour), clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	tokB, recB, err := auth.IssueToken(path, "reader", nil, time.Time{}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file mode %v (%v), want 0600", fi.Mode(), err)
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), tokA[len(tokA)-64:]) || strings.Contains(string(data), tokB[len(tokB)-64:]) {
		t.Fatal("the tokens file holds a token's secret")
	}
	tokens, err := auth.OpenTokens(path, &auth.FileOptions{Now: clk.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}

	id, err := tokens.Authenticate(tokA)
	if err != nil || id.Method != identity.MethodToken || id.Subject != "depotfs://local/token/ci" || id.TokenID != recA.ID ||
		id.Display != "ci" || id.Full || !slices.Equal(id.Grants, gs) {
		t.Fatalf("Authenticate = %+v, %v", id, err)
	}
	if id, err := tokens.Authenticate(tokB); err != nil || len(id.Grants) != 0 {
		t.Fatalf("a token without grants: %+v, %v", id, err)
	}

	wrongSecret := tokA[:len(tokA)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", tokA[len(tokA)-1])+1)%16])
	refused := []struct {
		name, token string
		want        error
	}{
		{"empty", "", auth.ErrTokenMalformed},
		{"foreign form", "ghp_abcdef", auth.ErrTokenMalformed},
		{"upper-case hex", strings.ToUpper(tokA), auth.ErrTokenMalformed},
		{"truncated", tokA[:len(tokA)-1], auth.ErrTokenMalformed},
		{"wrong secret", wrongSecret, auth.ErrTokenUnknown},
		{"unknown id", "dfs1_0000000000000000_" + tokA[len(tokA)-64:], auth.ErrTokenUnknown},
	}
	for _, tt := range refused {
		if _, err := tokens.Authenticate(tt.token); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}

	if err := auth.RevokeToken(path, recB.ID, clk.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Authenticate(tokB); !errors.Is(err, auth.ErrTokenRevoked) {
		t.Errorf("revoked token: %v", err)
	}
	if err := auth.RevokeToken(path, "ffffffffffffffff", clk.Now()); !errors.Is(err, auth.ErrTokenNotFound) {
		t.Errorf("revoke of an unknown id: %v", err)
	}
	clk.Add(24 * time.Hour)
	if _, err := tokens.Authenticate(tokA); !errors.Is(err, auth.ErrTokenExpired) {
		t.Errorf("expired token: %v", err)
	}

	list, err := auth.ListTokens(path)
	if err != nil || len(list) != 2 || list[1].Revoked.IsZero() || !list[0].Revoked.IsZero() {
		t.Errorf("ListTokens = %+v, %v", list, err)
	}
}

// TestTokensFileUnusable shows that every token is refused while the
// tokens file is broken, and accepted again once it is fixed.
func TestTokensFileUnusable(t *testing.T) {
	clk := newClock()
	path := filepath.Join(t.TempDir(), "tokens.json")
	tok, _, err := auth.IssueToken(path, "ci", nil, time.Time{}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	tokens, err := auth.OpenTokens(path, &auth.FileOptions{Now: clk.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name   string
		change func() error
		want   error
	}{
		{"group-writable", func() error { return os.Chmod(path, 0o664) }, auth.ErrTokensUnavailable},
		{"fixed mode", func() error { return os.Chmod(path, 0o600) }, nil},
		{"unknown field", func() error {
			return os.WriteFile(path, []byte(strings.Replace(string(good), `"version"`, `"admin": true, "version"`, 1)), 0o600)
		}, auth.ErrTokensUnavailable},
		{"restored", func() error { return os.WriteFile(path, good, 0o600) }, nil},
		{"removed", func() error { return os.Remove(path) }, auth.ErrTokensUnavailable},
		{"back", func() error { return os.WriteFile(path, good, 0o600) }, nil},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatal(err)
		}
		if _, err := tokens.Authenticate(tok); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("%s: %v, want %v", st.name, err, st.want)
		}
	}
}

func TestIssueTokenRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	for name, gs := range map[string][]grant.Grant{
		"bad name!": nil,
		"ok":        {{Tool: "guide", Prefix: "relative", Access: grant.Read}},
	} {
		if _, _, err := auth.IssueToken(path, name, gs, time.Time{}, base); err == nil {
			t.Errorf("IssueToken(%q, %v) succeeded", name, gs)
		}
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused issue created the file: %v", err)
	}
	if _, err := auth.OpenTokens(path, &auth.FileOptions{Logger: quiet}); !errors.Is(err, auth.ErrTokensUnavailable) {
		t.Errorf("OpenTokens of a missing file: %v", err)
	}
}

// TestTokenTenant: a token's tenant name reaches its identity; names
// depotfs gives callers without one, and names outside a-z 0-9 . _ -,
// are refused at issue, and a tokens file holding one is refused whole.
func TestTokenTenant(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.json")
	now := time.Now()
	tok, rec, err := auth.IssueTenantToken(path, "ci", "team-a", nil, time.Time{}, now)
	if err != nil || rec.Tenant != "team-a" {
		t.Fatalf("IssueTenantToken: %+v, %v", rec, err)
	}
	for _, bad := range []string{"operator", "local", "Team", "a/b", "a:b", strings.Repeat("t", 65)} {
		if _, _, err := auth.IssueTenantToken(path, "x", bad, nil, time.Time{}, now); err == nil {
			t.Errorf("IssueTenantToken with tenant %q succeeded", bad)
		}
	}
	tokens, err := auth.OpenTokens(path, &auth.FileOptions{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if id, err := tokens.Authenticate(tok); err != nil || id.Tenant != "team-a" {
		t.Errorf("Authenticate: %+v, %v; want tenant team-a", id, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(`"team-a"`), []byte(`"operator"`), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.OpenTokens(path, &auth.FileOptions{Logger: quiet}); err == nil {
		t.Error("a tokens file naming the tenant operator was accepted")
	}
}
