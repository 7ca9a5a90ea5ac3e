package auth_test

import (
	"errors"
	"slices"
	"testing"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/depotfs/depotfs/internal/auth"
	"github.com/depotfs/depotfs/internal/grant"
)

// buildGrants encodes a grants structure from raw parts, valid or not.
func buildGrants(version int64, grants [][3]any) []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(version)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for _, g := range grants {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte(g[0].(string))) })
					b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte(g[1].(string))) })
					b.AddASN1Int64(g[2].(int64))
				})
			}
		})
	})
	return b.BytesOrPanic()
}

func TestGrantsRoundTrip(t *testing.T) {
	tests := [][]grant.Grant{
		{},
		{{Tool: "*", Prefix: "/", Access: grant.Read}},
		{{Tool: "guide", Prefix: "/projects/a", Access: grant.ReadWrite}, {Tool: "guide_cache_file", Prefix: "/tmp/ü", Access: grant.Write}},
	}
	for _, gs := range tests {
		der, err := auth.EncodeGrants(gs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := auth.DecodeGrants(der)
		if err != nil || !slices.Equal(got, gs) {
			t.Errorf("round trip of %v: %v %v", gs, got, err)
		}
		ext, err := auth.GrantsExtension(gs)
		if err != nil || ext.Critical {
			t.Fatalf("GrantsExtension: %+v %v", ext, err)
		}
		if got, err := auth.DecodeGrantsExtension(ext.Value); err != nil || !slices.Equal(got, gs) {
			t.Errorf("extension round trip of %v: %v %v", gs, got, err)
		}
	}
}

func TestDecodeGrantsRefuses(t *testing.T) {
	valid := buildGrants(1, [][3]any{{"guide", "/a", int64(3)}})
	utf8Tagged := slices.Clone(valid)
	// Turn the tool's UTF8String (tag 12) into a PrintableString (19).
	utf8Tagged[slices.Index(utf8Tagged, 12)] = 19
	tests := []struct {
		name string
		der  []byte
		want error
	}{
		{"empty", nil, auth.ErrGrantsMalformed},
		{"not a sequence", []byte{0x04, 0x00}, auth.ErrGrantsMalformed},
		{"truncated", valid[:len(valid)-1], auth.ErrGrantsMalformed},
		{"trailing byte", append(slices.Clone(valid), 0), auth.ErrGrantsTrailing},
		{"version 0", buildGrants(0, nil), auth.ErrGrantsVersion},
		{"version 2", buildGrants(2, [][3]any{{"guide", "/a", int64(3)}}), auth.ErrGrantsVersion},
		{"negative version", buildGrants(-1, nil), auth.ErrGrantsVersion},
		{"non-minimal version", []byte{0x30, 0x06, 0x02, 0x02, 0x00, 0x01, 0x30, 0x00}, auth.ErrGrantsMalformed},
		{"non-minimal length", []byte{0x30, 0x81, 0x05, 0x02, 0x01, 0x01, 0x30, 0x00}, auth.ErrGrantsMalformed},
		{"indefinite length", []byte{0x30, 0x80, 0x02, 0x01, 0x01, 0x30, 0x00, 0x00, 0x00}, auth.ErrGrantsMalformed},
		{"extra field", []byte{0x30, 0x08, 0x02, 0x01, 0x01, 0x30, 0x00, 0x02, 0x01, 0x00}, auth.ErrGrantsMalformed},
		{"PrintableString tool", utf8Tagged, auth.ErrGrantsMalformed},
		{"access 0", buildGrants(1, [][3]any{{"guide", "/a", int64(0)}}), auth.ErrGrantsMalformed},
		{"access 4", buildGrants(1, [][3]any{{"guide", "/a", int64(4)}}), auth.ErrGrantsMalformed},
		{"empty tool", buildGrants(1, [][3]any{{"", "/a", int64(1)}}), auth.ErrGrantsMalformed},
		{"tool with a space", buildGrants(1, [][3]any{{"a b", "/a", int64(1)}}), auth.ErrGrantsMalformed},
		{"relative prefix", buildGrants(1, [][3]any{{"guide", "a", int64(1)}}), auth.ErrGrantsMalformed},
		{"unclean prefix", buildGrants(1, [][3]any{{"guide", "/a/../b", int64(1)}}), auth.ErrGrantsMalformed},
		{"prefix with a trailing slash", buildGrants(1, [][3]any{{"guide", "/a/", int64(1)}}), auth.ErrGrantsMalformed},
		{"invalid UTF-8 prefix", buildGrants(1, [][3]any{{"guide", "/a\xff", int64(1)}}), auth.ErrGrantsMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs, err := auth.DecodeGrants(tt.der)
			if !errors.Is(err, tt.want) || gs != nil {
				t.Errorf("DecodeGrants = %v, %v; want nil, %v", gs, err, tt.want)
			}
		})
	}
}

func TestDecodeGrantsExtensionRefuses(t *testing.T) {
	valid := buildGrants(1, [][3]any{{"guide", "/a", int64(3)}})
	twice := sdaExtension(t, valid).Value
	// Two attributes of the grants type: splice the attribute in again.
	inner := twice[2:]
	two := append([]byte{0x30, byte(2 * len(inner))}, append(slices.Clone(inner), inner...)...)
	other := []byte{0x30, 0x07, 0x30, 0x05, 0x06, 0x03, 0x55, 0x04, 0x03} // an attribute without its SET
	tests := []struct {
		name  string
		value []byte
		want  error
	}{
		{"grants attribute twice", two, auth.ErrGrantsMalformed},
		{"bytes after the extension", append(slices.Clone(twice), 0), auth.ErrGrantsTrailing},
		{"bytes after the value", sdaExtension(t, append(slices.Clone(valid), 0x05, 0x00)).Value, auth.ErrGrantsTrailing},
		{"value not a sequence", sdaExtension(t, []byte{0x05, 0x00}).Value, auth.ErrGrantsMalformed},
		{"only a foreign attribute", foreignAttribute(), auth.ErrNoGrants},
		{"malformed foreign attribute", other, auth.ErrGrantsMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs, err := auth.DecodeGrantsExtension(tt.value)
			if !errors.Is(err, tt.want) || gs != nil {
				t.Errorf("DecodeGrantsExtension = %v, %v; want nil, %v", gs, err, tt.want)
			}
		})
	}
}

// foreignAttribute is a subjectDirectoryAttributes with one attribute of
// another type (countryOfCitizenship 1.3.6.1.5.5.7.9.4 = "NZ").
func foreignAttribute() []byte {
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes([]byte{0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x09, 0x04}) })
			b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) {
				b.AddASN1(cbasn1.PrintableString, func(b *cryptobyte.Builder) { b.AddBytes([]byte("NZ")) })
			})
		})
	})
	return b.BytesOrPanic()
}

func TestEncodeGrantsRefuses(t *testing.T) {
	for _, g := range []grant.Grant{
		{Tool: "", Prefix: "/", Access: grant.Read},
		{Tool: "guide", Prefix: "rel", Access: grant.Read},
		{Tool: "guide", Prefix: "/", Access: 0},
	} {
		if _, err := auth.EncodeGrants([]grant.Grant{g}); err == nil {
			t.Errorf("EncodeGrants(%v) succeeded", g)
		}
	}
	if _, err := auth.EncodeGrants(make([]grant.Grant, auth.MaxGrants+1)); err == nil {
		t.Error("EncodeGrants accepted too many grants")
	}
}

func TestDecodeLegacyGrants(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  []string // tools; nil means refused
	}{
		{"one tool", `{"allowed_tools": ["guide_cache_file"]}`, []string{"guide_cache_file"}},
		{"no tools", `{"allowed_tools": []}`, []string{}},
		{"duplicate key", `{"allowed_tools": ["a"], "allowed_tools": ["b"]}`, nil},
		{"case-variant key", `{"Allowed_Tools": ["a"]}`, nil},
		{"case-variant duplicate", `{"allowed_tools": ["a"], "ALLOWED_TOOLS": ["b"]}`, nil},
		{"unknown key", `{"allowed_tools": ["a"], "admin": true}`, nil},
		{"no key", `{}`, nil},
		{"not strings", `{"allowed_tools": [1]}`, nil},
		{"nested", `{"allowed_tools": [["a"]]}`, nil},
		{"not an array", `{"allowed_tools": "a"}`, nil},
		{"trailing data", `{"allowed_tools": ["a"]} {}`, nil},
		{"duplicate tool", `{"allowed_tools": ["a", "a"]}`, nil},
		{"wildcard tool", `{"allowed_tools": ["*"]}`, nil},
		{"invalid UTF-8", "{\"allowed_tools\": [\"a\xff\"]}", nil},
		{"not JSON", `allowed_tools`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gs, err := auth.DecodeLegacyGrants([]byte(tt.value))
			if tt.want == nil {
				if !errors.Is(err, auth.ErrGrantsMalformed) || gs != nil {
					t.Errorf("= %v, %v; want refused", gs, err)
				}
				return
			}
			if err != nil || len(gs) != len(tt.want) {
				t.Fatalf("= %v, %v; want %v", gs, err, tt.want)
			}
			for i, g := range gs {
				if g != (grant.Grant{Tool: tt.want[i], Prefix: "/", Access: grant.ReadWrite}) {
					t.Errorf("grant %d = %v", i, g)
				}
			}
		})
	}
}
