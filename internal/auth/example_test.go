package auth_test

import (
	"fmt"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
)

// The grants an agent certificate carries, as DER and back. depotfs ca
// issue puts GrantsExtension's result into the certificate.
func ExampleEncodeGrants() {
	g, err := grant.Parse("guide:/projects/a:rw")
	if err != nil {
		panic(err)
	}
	der, err := auth.EncodeGrants([]grant.Grant{g})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%x\n", der)
	back, err := auth.DecodeGrants(der)
	fmt.Println(back, err)
	_, err = auth.DecodeGrants(append(der, 0))
	fmt.Println(err)
	// Output:
	// 301e020101301930170c0567756964650c0b2f70726f6a656374732f61020103
	// [guide:/projects/a:rw] <nil>
	// trailing bytes after grants extension: 1 bytes
}

// A pki-mcp-core certificate's tool list becomes tool grants on "/", which
// the server's --allow policy then bounds.
func ExampleDecodeLegacyGrants() {
	gs, err := auth.DecodeLegacyGrants([]byte(`{"allowed_tools": ["guide_cache_file"]}`))
	fmt.Println(gs, err)
	_, err = auth.DecodeLegacyGrants([]byte(`{"allowed_tools": ["a"], "Allowed_Tools": ["b"]}`))
	fmt.Println(err)
	// Output:
	// [guide_cache_file:/:rw] <nil>
	// malformed grants extension: legacy extension: key "Allowed_Tools" (only one "allowed_tools" is allowed)
}
