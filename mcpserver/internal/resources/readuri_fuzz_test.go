package resources

import (
	"strings"
	"testing"
)

// FuzzParseReadURI: resources/read's URI, with its one query, comes from
// clients. parseReadURI never panics, keeps its errors short, and agrees
// with ParseURI on the path: without a query they answer alike; with
// revision=N the path is the one the URI before "?" names.
func FuzzParseReadURI(f *testing.F) {
	for _, s := range []string{"depot:///a", "depot:///a?revision=3", "depot:///a?revision=0", "depot:///a?revision=3#x", "depot:///a?rev=1", "depot:///%3F?revision=18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		p, rev, err := parseReadURI(uri)
		if err != nil {
			if len(err.Error()) > 8192 {
				t.Fatalf("error of %d bytes for a URI of %d bytes", len(err.Error()), len(uri))
			}
			return
		}
		base, _, hasQuery := strings.Cut(uri, "?")
		if hasQuery != (rev != 0) {
			t.Fatalf("parseReadURI(%q): revision %d", uri, rev)
		}
		if want, werr := ParseURI(base); werr != nil || want != p {
			t.Fatalf("parseReadURI(%q) = %q; ParseURI(%q) = %q, %v", uri, p, base, want, werr)
		}
	})
}
