package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/depotfs/depotfs/internal/auth"
)

var runToken = group("token", "Bearer tokens for MCP clients that cannot present a client certificate.", []command{
	{"issue", "issue a bearer token for an agent and print it once", runTokenIssue},
	{"list", "list the issued tokens (ids, names, grants, expiry; never the tokens)", runTokenList},
	{"revoke", "revoke a token by id", runTokenRevoke},
})

// defaultTokensFile is the tokens file beside the database db.
func defaultTokensFile(db string) string { return filepath.Join(filepath.Dir(db), "tokens.json") }

// tokenFlags is the flag set of "depotfs token name", with its --tokens.
func tokenFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("token "+name, flag.ContinueOnError)
	return fs, fs.String("tokens", defaultTokensFile(defaultDB()), "tokens `file` (JSON, mode 0600, holding only hashes); serve reads the same file")
}

func runTokenIssue(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, path := tokenFlags("issue")
	name := fs.String("name", "", "the agent's `name` (required); its identity is depotfs://local/token/<name>")
	var grants grantsFlag
	fs.Var(&grants, "grant", "a grant `TOOL:PREFIX:ACCESS` (repeatable; ACCESS r, w or rw), e.g. guide:/projects/a:rw")
	nDays := fs.Int("days", 30, "`days` the token stays valid; 0 for no expiry")
	tenant := fs.String("tenant", "", "the `tenant` whose limits the token counts against (a-z 0-9 . _ -); default: the tenant of its grants, shared by every token with the same grant prefixes")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if *name == "" {
		return usageError{errors.New("--name is required")}
	}
	now := time.Now()
	var expires time.Time
	if *nDays != 0 {
		validity, err := days(*nDays)
		if err != nil {
			return err
		}
		expires = now.Add(validity)
	}
	tok, rec, err := auth.IssueTenantToken(*path, *name, *tenant, grants.grants, expires, now)
	if err != nil {
		return err
	}
	// The token alone on stdout, so it can be captured; the rest on stderr.
	fmt.Fprintln(stdout, tok)
	fmt.Fprintf(stderr, "issued token %s for %s, %s\n  grants: %s\n  stored as a hash in %s; this is the only time the token is shown.\n  Clients send it as: Authorization: Bearer <token>\n",
		rec.ID, rec.Identity, expiry(rec.Expires), grantsOrNone(grants.String()), *path)
	return nil
}

func expiry(t time.Time) string {
	if t.IsZero() {
		return "no expiry"
	}
	return "expires " + t.UTC().Format(time.RFC3339)
}

func runTokenList(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, path := tokenFlags("list")
	asJSON := fs.Bool("json", false, "print one JSON object per token instead of a table")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	recs, err := auth.ListTokens(*path)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSTATE\tEXPIRES\tGRANTS")
	now := time.Now()
	for _, r := range recs {
		state := "valid"
		switch {
		case !r.Revoked.IsZero():
			state = "revoked"
		case !r.Expires.IsZero() && !now.Before(r.Expires):
			state = "expired"
		}
		exp := "never"
		if !r.Expires.IsZero() {
			exp = r.Expires.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, state, exp, strings.Join(r.Grants, ","))
	}
	return tw.Flush()
}

func runTokenRevoke(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs, path := tokenFlags("revoke")
	pos, err := parseFlagsArgs(fs, args, stderr, 1, "one token ID")
	if err != nil {
		return err
	}
	if err := auth.RevokeToken(*path, pos[0], time.Now()); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "revoked token %s; a server reading %s refuses it from its next request\n", pos[0], *path)
	return nil
}
