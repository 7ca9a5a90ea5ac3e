package auth

import (
	"bytes"
	"encoding/asn1"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"unicode/utf8"

	"github.com/depotfs/depotfs/internal/grant"
)

// LegacyGrantsOID is the extension in which certificates made by the
// pki-mcp-core prototype carry their tool list as JSON,
// {"allowed_tools": ["tool", …]}. It sits in an enterprise arc depotfs does
// not own; depotfs reads it only when told to (serve
// --accept-legacy-grants).
var LegacyGrantsOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 99999, 1}

// legacyKey is the one key a legacy extension may have.
const legacyKey = "allowed_tools"

// maxLegacyBytes bounds the JSON of a legacy extension.
const maxLegacyBytes = 16 << 10

// DecodeLegacyGrants reads a legacy extension's value strictly: UTF-8 JSON,
// one object whose only key is exactly "allowed_tools" (a duplicate, a
// case variant or any other key is refused), an array of distinct tool
// names, nothing after the object. Each tool becomes a read-write grant on
// "/": the prototype had no paths, and depotfs intersects every grant with
// its own --allow/--deny policy, so the grant covers exactly the server's
// allowed prefixes. Errors wrap ErrGrantsMalformed.
func DecodeLegacyGrants(value []byte) ([]grant.Grant, error) {
	if len(value) > maxLegacyBytes || !utf8.Valid(value) {
		return nil, fmt.Errorf("%w: legacy extension is not UTF-8 JSON of at most %d bytes", ErrGrantsMalformed, maxLegacyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	expect := func(want json.Delim) error {
		tok, err := dec.Token()
		if err != nil || tok != want {
			return fmt.Errorf("%w: legacy extension: want %q", ErrGrantsMalformed, want)
		}
		return nil
	}
	if err := expect('{'); err != nil {
		return nil, err
	}
	gs := []grant.Grant{}
	seen := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: legacy extension: %w", ErrGrantsMalformed, err)
		}
		if key, _ := tok.(string); key != legacyKey || seen {
			return nil, fmt.Errorf("%w: legacy extension: key %q (only one %q is allowed)", ErrGrantsMalformed, tok, legacyKey)
		}
		seen = true
		if err := expect('['); err != nil {
			return nil, err
		}
		for dec.More() {
			tok, err := dec.Token()
			tool, ok := tok.(string)
			switch {
			case err != nil || !ok:
				return nil, fmt.Errorf("%w: legacy extension: allowed_tools must hold strings", ErrGrantsMalformed)
			case len(gs) == MaxGrants:
				return nil, fmt.Errorf("%w: legacy extension: more than %d tools", ErrGrantsMalformed, MaxGrants)
			case checkToolName(tool) != nil || tool == grant.AnyTool:
				return nil, fmt.Errorf("%w: legacy extension: tool %q", ErrGrantsMalformed, tool)
			case slices.ContainsFunc(gs, func(g grant.Grant) bool { return g.Tool == tool }):
				return nil, fmt.Errorf("%w: legacy extension: tool %q listed twice", ErrGrantsMalformed, tool)
			}
			gs = append(gs, grant.Grant{Tool: tool, Prefix: "/", Access: grant.ReadWrite})
		}
		if err := expect(']'); err != nil {
			return nil, err
		}
	}
	if err := expect('}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: legacy extension: data after the object", ErrGrantsMalformed)
	}
	if !seen {
		return nil, fmt.Errorf("%w: legacy extension has no %q", ErrGrantsMalformed, legacyKey)
	}
	return gs, nil
}
