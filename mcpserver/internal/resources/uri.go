package resources

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/internal/clip"
	"github.com/depotfs/depotfs/internal/depotpath"
)

// Scheme is the URI scheme of the depot's MCP resources.
const Scheme = "depot"

// URITemplate is the RFC 6570 URI template that addresses every depot
// file as a resource: "depot:///" followed by the path without its leading
// slash, percent-encoded as ResourceURI does.
const URITemplate = "depot:///{+path}"

// ErrURI reports a URI that does not name a depot resource.
var ErrURI = errors.New("not a depot resource URI")

// ResourceURI returns the resource URI of a clean depot path:
// "depot://" followed by the path, in which every byte other than an RFC
// 3986 unreserved character (A-Z a-z 0-9 - . _ ~) or a "/" separator is
// percent-encoded with upper-case hex digits, so "/docs/a b/ü.txt" is
// "depot:///docs/a%20b/%C3%BC.txt". The encoding is deterministic: a path
// has exactly one URI as depotfs writes it. It is safe for concurrent use.
func URI(cleanPath string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(Scheme) + 3 + len(cleanPath))
	b.WriteString(Scheme + "://")
	for i := 0; i < len(cleanPath); i++ {
		c := cleanPath[i]
		if c == '/' || unreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

// ParseResourceURI returns the clean depot path a resource URI names. It
// accepts any valid percent-encoding, not only the one ResourceURI writes
// (an unencoded "+" or "@", lower-case hex, "%2F" as a separator), and
// normalizes the path with depotpath.Clean, so "depot:///a//b/../c" names
// "/a/c". It refuses, with an error wrapping ErrURI or a depotpath
// sentinel: a character RFC 3986 does not allow in a URI (a space, raw
// non-ASCII: percent-encode them), another scheme, a host
// ("depot://host/x"), a query or fragment (escape "?" and "#" as %3F and
// %23), and a path depotpath.Clean refuses. It is safe for concurrent use.
func ParseURI(uri string) (string, error) {
	shown := clip.String(uri) // the client's: bounded in messages
	for _, r := range uri {
		if r >= 0x80 || !unreserved(byte(r)) && !strings.ContainsRune(":/?#[]@!$&'()*+,;=%", r) {
			return "", fmt.Errorf("%w: %q has the character %q, which must be percent-encoded (as UTF-8 bytes: %%XX)", ErrURI, shown, r)
		}
	}
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: %q is not a valid URI (percent-encode spaces, %%, non-ASCII and other special characters)", ErrURI, shown)
	}
	switch {
	case u.Scheme != Scheme:
		return "", fmt.Errorf("%w: %q does not start with %s:///", ErrURI, shown, Scheme)
	case u.Opaque != "" || u.Host != "" || u.User != nil:
		return "", fmt.Errorf("%w: %q has a host or no path; write %s:/// (three slashes) and the depot path", ErrURI, shown, Scheme)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.HasSuffix(uri, "#"):
		return "", fmt.Errorf("%w: %q has a query or fragment; percent-encode ? and # in paths as %%3F and %%23", ErrURI, shown)
	case u.Path == "":
		return "", fmt.Errorf("%w: %q names no path; the root is %s:///", ErrURI, shown, Scheme)
	}
	p, err := depotpath.Clean(u.Path)
	if err != nil {
		return "", fmt.Errorf("resource URI %q: %w", shown, err)
	}
	return p, nil
}

// parseReadURI is ParseURI for resources/read, which also takes one
// query, revision=N: the file as it was at revision N (a version
// guide_file_history lists, or a snapshot's revision). A "?" in a path is
// percent-encoded (%3F), so the first raw "?" starts the query.
func parseReadURI(uri string) (string, uint64, error) {
	base, query, ok := strings.Cut(uri, "?")
	if !ok {
		p, err := ParseURI(uri)
		return p, 0, err
	}
	v, found := strings.CutPrefix(query, "revision=")
	rev, err := strconv.ParseUint(v, 10, 64)
	if !found || err != nil || rev == 0 {
		return "", 0, fmt.Errorf("%w: %q has a query or fragment other than revision=N (N above 0, the one query a read takes); percent-encode ? and # in paths as %%3F and %%23", ErrURI, clip.String(uri))
	}
	p, err := ParseURI(base)
	return p, rev, err
}
