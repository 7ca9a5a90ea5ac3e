package auth_test

import (
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
)

// FuzzBearer: the Authorization header is the first thing a client sends.
// Authenticate never panics, and accepts exactly the issued token in the
// form "Bearer <token>", nothing else (a prefix, a suffix, another case of
// the secret). Seeds: testdata/fuzz/FuzzBearer.
func FuzzBearer(f *testing.F) {
	path := filepath.Join(f.TempDir(), "tokens.json")
	tok, _, err := auth.IssueToken(path, "fuzz", nil, time.Time{}, time.Now())
	if err != nil {
		f.Fatal(err)
	}
	tokens, err := auth.OpenTokens(path, nil)
	if err != nil {
		f.Fatal(err)
	}
	a := &auth.Authenticator{Tokens: tokens}
	want := "Bearer " + tok
	for _, s := range []string{want, "Bearer " + tok[:len(tok)-1], "bearer " + tok, "Bearer  " + tok, "Basic eA==", "Bearer dfs1_", want + " "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
		r.Header.Set("Authorization", header)
		id, err := a.Authenticate(r)
		if err == nil && header != want && header != "bearer "+tok {
			t.Fatalf("Authorization %q accepted as %v", header, id)
		}
	})
}
