package resources_test

import (
	"strings"
	"testing"

	"github.com/depotfs/depotfs/internal/depotpath"
	"github.com/depotfs/depotfs/mcpserver/internal/resources"
)

// FuzzParseURI: resource URIs come from clients (resources/read,
// resources/subscribe). ParseURI never panics; what it accepts is a clean
// depot path whose canonical URI parses back to it; its errors stay short
// whatever was sent. Seeds: testdata/fuzz/FuzzParseURI.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"depot:///", "depot:///a%20b/%C3%BC.txt", "depot://host/x", "depot:///a?b", "depot:///%2e%2e/x", "file:///etc/passwd", "depot:///" + strings.Repeat("%41", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		p, err := resources.ParseURI(uri)
		if err != nil {
			// A path (at most 4096 bytes) may be named; the URI is clipped.
			if len(err.Error()) > 8192 {
				t.Fatalf("error of %d bytes for a URI of %d bytes", len(err.Error()), len(uri))
			}
			return
		}
		if c, cerr := depotpath.Clean(p); cerr != nil || c != p {
			t.Fatalf("ParseURI(%q) = %q, not a clean path (%q, %v)", uri, p, c, cerr)
		}
		if back, err := resources.ParseURI(resources.URI(p)); err != nil || back != p {
			t.Fatalf("URI(%q) = %q parses to %q, %v", p, resources.URI(p), back, err)
		}
	})
}
