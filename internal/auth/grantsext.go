package auth

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/cryptobyte"
	cbasn1 "golang.org/x/crypto/cryptobyte/asn1"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/internal/grant"
)

// Arc is depotfs's own OID arc: 2.25 followed by the decimal integer of a
// UUID generated once for depotfs (bd2b0048-40e4-4025-ab4e-e7866b3621bd), so
// it needs no registration and collides with no one (ITU-T X.667).
const Arc = "2.25.251447365692776777235645364898251547069"

// GrantsOID identifies depotfs grants: Arc.1.
const GrantsOID = Arc + ".1"

// SubjectDirectoryAttributesOID is the standard X.509 extension (RFC 5280
// 4.2.1.8) that carries the grants as an attribute of type GrantsOID.
//
// Why not an extension with GrantsOID itself: Go's crypto/x509 (and so
// crypto/tls) reads extension OIDs into []int and refuses arcs of 2^31 and
// more, so a certificate with a 2.25.<uuid> extension fails to parse at all
// ("x509: malformed extension OID field") and no Go TLS server could accept
// it. Attribute types inside subjectDirectoryAttributes are read by depotfs
// alone, which handles arcs of any size.
var SubjectDirectoryAttributesOID = asn1.ObjectIdentifier{2, 5, 29, 9}

// GrantsVersion is the version of the grants structure this depotfs
// writes and the only one it reads.
const GrantsVersion = 1

// MaxGrants bounds the grants of one credential.
const MaxGrants = 256

// maxToolName bounds a grant's tool name.
const maxToolName = 64

// grantsOIDDER is the content octets of GrantsOID, for comparison with an
// attribute type as it appears in a certificate.
var grantsOIDDER = func() []byte {
	oid, err := x509.ParseOID(GrantsOID)
	if err != nil {
		panic(err)
	}
	der, err := oid.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return der
}()

// EncodeGrants returns the DER encoding of gs:
//
//	DepotfsGrants ::= SEQUENCE {
//	    version INTEGER (1),
//	    grants  SEQUENCE SIZE (0..256) OF Grant }
//	Grant ::= SEQUENCE {
//	    tool   UTF8String,  -- a tool name, a tool group, or "*"
//	    prefix UTF8String,  -- a clean absolute depot path
//	    access INTEGER { r(1), w(2), rw(3) } }
//
// It refuses grants that DecodeGrants would refuse.
func EncodeGrants(gs []grant.Grant) ([]byte, error) {
	if len(gs) > MaxGrants {
		return nil, fmt.Errorf("encode grants: %d grants, at most %d", len(gs), MaxGrants)
	}
	for _, g := range gs {
		if err := checkGrant(g); err != nil {
			return nil, fmt.Errorf("encode grants: %w", err)
		}
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1Int64(GrantsVersion)
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			for _, g := range gs {
				b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
					b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte(g.Tool)) })
					b.AddASN1(cbasn1.UTF8String, func(b *cryptobyte.Builder) { b.AddBytes([]byte(g.Prefix)) })
					b.AddASN1Int64(int64(g.Access))
				})
			}
		})
	})
	return b.Bytes()
}

// DecodeGrants parses the DER that EncodeGrants writes, strictly: exact
// DER (minimal lengths and integers), UTF8String only, no element missing
// or added, version GrantsVersion, every grant valid, nothing after the
// structure. Any deviation is an error wrapping ErrGrantsMalformed,
// ErrGrantsVersion or ErrGrantsTrailing, and the caller grants nothing.
func DecodeGrants(der []byte) ([]grant.Grant, error) {
	in := cryptobyte.String(der)
	var seq cryptobyte.String
	if !in.ReadASN1(&seq, cbasn1.SEQUENCE) {
		return nil, fmt.Errorf("%w: not a DER SEQUENCE", ErrGrantsMalformed)
	}
	if !in.Empty() {
		return nil, fmt.Errorf("%w: %d bytes", ErrGrantsTrailing, len(in))
	}
	var version int64
	if !seq.ReadASN1Integer(&version) {
		return nil, fmt.Errorf("%w: no version", ErrGrantsMalformed)
	}
	if version != GrantsVersion {
		return nil, fmt.Errorf("%w: %d (this depotfs reads %d)", ErrGrantsVersion, version, GrantsVersion)
	}
	var list cryptobyte.String
	if !seq.ReadASN1(&list, cbasn1.SEQUENCE) || !seq.Empty() {
		return nil, fmt.Errorf("%w: want version and one SEQUENCE OF grants", ErrGrantsMalformed)
	}
	gs := []grant.Grant{}
	for !list.Empty() {
		if len(gs) == MaxGrants {
			return nil, fmt.Errorf("%w: more than %d grants", ErrGrantsMalformed, MaxGrants)
		}
		var el, tool, prefix cryptobyte.String
		var access int64
		if !list.ReadASN1(&el, cbasn1.SEQUENCE) ||
			!el.ReadASN1(&tool, cbasn1.UTF8String) ||
			!el.ReadASN1(&prefix, cbasn1.UTF8String) ||
			!el.ReadASN1Integer(&access) || !el.Empty() {
			return nil, fmt.Errorf("%w: grant %d is not SEQUENCE { UTF8String, UTF8String, INTEGER }", ErrGrantsMalformed, len(gs))
		}
		if access < int64(grant.Read) || access > int64(grant.ReadWrite) {
			return nil, fmt.Errorf("%w: grant %d: access %d", ErrGrantsMalformed, len(gs), access)
		}
		g := grant.Grant{Tool: string(tool), Prefix: string(prefix), Access: grant.Access(access)}
		if err := checkGrant(g); err != nil {
			return nil, fmt.Errorf("%w: grant %d: %w", ErrGrantsMalformed, len(gs), err)
		}
		gs = append(gs, g)
	}
	return gs, nil
}

// checkGrant reports whether g can travel in a credential: a tool name of
// letters, digits, '_', '.', '-' (or "*"), a clean absolute prefix and a
// known access level.
func checkGrant(g grant.Grant) error {
	if err := checkToolName(g.Tool); err != nil {
		return err
	}
	if clean, err := depotpath.Clean(g.Prefix); err != nil || clean != g.Prefix || g.Prefix == "" || g.Prefix[0] != '/' {
		return fmt.Errorf("grant %s: prefix must be a clean absolute depot path", g)
	}
	if g.Access < grant.Read || g.Access > grant.ReadWrite {
		return fmt.Errorf("grant %s: access must be r, w or rw", g)
	}
	return nil
}

func checkToolName(tool string) error {
	if tool == grant.AnyTool {
		return nil
	}
	if tool == "" || len(tool) > maxToolName || !utf8.ValidString(tool) {
		return fmt.Errorf("tool %q: want 1 to %d characters", tool, maxToolName)
	}
	if strings.Trim(tool, nameChars) != "" {
		return fmt.Errorf("tool %q: only letters, digits, '_', '.' and '-'", tool)
	}
	return nil
}

// GrantsExtension returns the certificate extension that carries gs: a
// non-critical subjectDirectoryAttributes holding one attribute of type
// GrantsOID with one value, EncodeGrants(gs).
func GrantsExtension(gs []grant.Grant) (pkix.Extension, error) {
	value, err := EncodeGrants(gs)
	if err != nil {
		return pkix.Extension{}, err
	}
	var b cryptobyte.Builder
	b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
		b.AddASN1(cbasn1.SEQUENCE, func(b *cryptobyte.Builder) {
			b.AddASN1(cbasn1.OBJECT_IDENTIFIER, func(b *cryptobyte.Builder) { b.AddBytes(grantsOIDDER) })
			b.AddASN1(cbasn1.SET, func(b *cryptobyte.Builder) { b.AddBytes(value) })
		})
	})
	der, err := b.Bytes()
	if err != nil {
		return pkix.Extension{}, fmt.Errorf("encode grants extension: %w", err)
	}
	return pkix.Extension{Id: SubjectDirectoryAttributesOID, Value: der}, nil
}

// DecodeGrantsExtension returns the grants in the value of a
// subjectDirectoryAttributes extension. Attributes of other types are
// ignored; the grants attribute must appear once, with one value, which
// DecodeGrants must accept. Without it the error wraps ErrNoGrants.
func DecodeGrantsExtension(value []byte) ([]grant.Grant, error) {
	in := cryptobyte.String(value)
	var attrs cryptobyte.String
	if !in.ReadASN1(&attrs, cbasn1.SEQUENCE) {
		return nil, fmt.Errorf("%w: subjectDirectoryAttributes is not a DER SEQUENCE", ErrGrantsMalformed)
	}
	if !in.Empty() {
		return nil, fmt.Errorf("%w: %d bytes after subjectDirectoryAttributes", ErrGrantsTrailing, len(in))
	}
	var found []byte
	for !attrs.Empty() {
		var attr, typ, values cryptobyte.String
		if !attrs.ReadASN1(&attr, cbasn1.SEQUENCE) ||
			!attr.ReadASN1(&typ, cbasn1.OBJECT_IDENTIFIER) ||
			!attr.ReadASN1(&values, cbasn1.SET) || !attr.Empty() {
			return nil, fmt.Errorf("%w: attribute is not SEQUENCE { OBJECT IDENTIFIER, SET }", ErrGrantsMalformed)
		}
		if !bytes.Equal(typ, grantsOIDDER) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%w: grants attribute appears twice", ErrGrantsMalformed)
		}
		var one cryptobyte.String
		if !values.ReadASN1Element(&one, cbasn1.SEQUENCE) {
			return nil, fmt.Errorf("%w: grants attribute has no SEQUENCE value", ErrGrantsMalformed)
		}
		if !values.Empty() {
			return nil, fmt.Errorf("%w: %d bytes after the grants value", ErrGrantsTrailing, len(values))
		}
		found = one
	}
	if found == nil {
		return nil, ErrNoGrants
	}
	return DecodeGrants(found)
}

// CertGrants returns the grants a certificate carries: the depotfs grants
// attribute when present (valid or not); otherwise, if legacy is true, a
// legacy JSON extension (see DecodeLegacyGrants); otherwise an error
// wrapping ErrNoGrants. On any error the certificate grants nothing.
func CertGrants(cert *x509.Certificate, legacy bool) ([]grant.Grant, error) {
	if v, ok := extension(cert, SubjectDirectoryAttributesOID); ok {
		gs, err := DecodeGrantsExtension(v)
		if !errors.Is(err, ErrNoGrants) {
			return gs, err
		}
	}
	if v, ok := extension(cert, LegacyGrantsOID); ok && legacy {
		return DecodeLegacyGrants(v)
	}
	return nil, ErrNoGrants
}

// extension returns the value of cert's extension oid. Go's parser refuses
// certificates with duplicate extensions, so there is at most one.
func extension(cert *x509.Certificate, oid asn1.ObjectIdentifier) ([]byte, bool) {
	for _, ext := range cert.Extensions {
		if ext.Id.Equal(oid) {
			return ext.Value, true
		}
	}
	return nil, false
}
