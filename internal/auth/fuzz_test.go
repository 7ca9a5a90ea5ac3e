package auth_test

import (
	"bytes"
	"testing"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
)

// FuzzDecodeGrants: the decoder never panics, and whatever it accepts is
// valid and is exactly what EncodeGrants writes for those grants (DER has
// one encoding, so nothing else may be accepted). Seeds live in
// testdata/fuzz/FuzzDecodeGrants.
func FuzzDecodeGrants(f *testing.F) {
	f.Fuzz(func(t *testing.T, der []byte) {
		gs, err := auth.DecodeGrants(der)
		if err != nil {
			if gs != nil {
				t.Fatalf("grants %v returned with error %v", gs, err)
			}
			return
		}
		again, err := auth.EncodeGrants(gs)
		if err != nil {
			t.Fatalf("accepted grants %v cannot be encoded: %v", gs, err)
		}
		if !bytes.Equal(again, der) {
			t.Fatalf("accepted %x, but the grants %v encode as %x", der, gs, again)
		}
	})
}

// FuzzDecodeGrantsExtension: the extension decoder never panics and
// accepts only grants that encode again.
func FuzzDecodeGrantsExtension(f *testing.F) {
	f.Fuzz(func(t *testing.T, value []byte) {
		gs, err := auth.DecodeGrantsExtension(value)
		if err != nil {
			if gs != nil {
				t.Fatalf("grants %v returned with error %v", gs, err)
			}
			return
		}
		if _, err := auth.EncodeGrants(gs); err != nil {
			t.Fatalf("accepted invalid grants %v: %v", gs, err)
		}
	})
}

// FuzzDecodeLegacyGrants: the legacy JSON decoder never panics and
// accepts only distinct, valid tool names, each granted on "/".
func FuzzDecodeLegacyGrants(f *testing.F) {
	f.Fuzz(func(t *testing.T, value []byte) {
		gs, err := auth.DecodeLegacyGrants(value)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, g := range gs {
			if g.Prefix != "/" || g.Access != grant.ReadWrite || g.Tool == grant.AnyTool || seen[g.Tool] {
				t.Fatalf("accepted %q as %v", value, gs)
			}
			seen[g.Tool] = true
		}
		if _, err := auth.EncodeGrants(gs); err != nil {
			t.Fatalf("accepted invalid tools %q: %v", value, err)
		}
	})
}
