package httpfile_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/httpfile"
)

// decoded is a link's URL path as net/http decodes it.
func decoded(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

func TestLinkRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/a.txt", "/dir/with space/ü%2F?#.bin", "/a/b/c/d"} {
		link := httpfile.Link("http:depotfs://local/token/a", p, 42)
		target, err := httpfile.ParseLink(decoded(t, link))
		if err != nil || target.Path != p || target.Rev != 42 {
			t.Fatalf("ParseLink(Link(%q)) = %+v, %v", p, target, err)
		}
		if !target.Check("http:depotfs://local/token/a") {
			t.Errorf("%s: the link does not check for its own identity", p)
		}
		if target.Check("http:depotfs://local/token/b") || target.Check("") {
			t.Errorf("%s: the link checks for another identity", p)
		}
	}
}

func TestParseLinkRefuses(t *testing.T) {
	t.Parallel()
	good := decoded(t, httpfile.Link("w", "/x/y", 7))
	tag := strings.Split(good, "/")[2]
	for _, p := range []string{
		"/files/", "/files/" + tag, "/files/" + tag + "/7", "/files/" + tag + "/07/x/y", "/files/" + tag + "/0/x/y",
		"/files/" + tag + "/-7/x/y", "/files/" + tag[1:] + "/7/x/y", "/files/" + tag + "/7/x/../y", "/files/" + tag + "/7/x//y",
		"/files/" + tag + "/7/x/y/", "/files/" + tag + "/7/x\x00", "/files/" + tag + "/7/", "/other/" + tag + "/7/x/y",
		"/files/" + tag + "/18446744073709551616/x",
	} {
		if target, err := httpfile.ParseLink(p); !errors.Is(err, httpfile.ErrLink) {
			t.Errorf("ParseLink(%q) = %+v, %v; want ErrLink", p, target, err)
		}
	}
	// A link for one path or revision does not check for another.
	target, err := httpfile.ParseLink(strings.Replace(good, "/7/", "/8/", 1))
	if err != nil || target.Check("w") {
		t.Errorf("a link moved to revision 8 checks: %v", err)
	}
}

// FuzzParseLink: whatever the URL path, ParseLink either refuses it or
// returns a clean path that Link spells back to the same URL path for the
// tag it carries.
func FuzzParseLink(f *testing.F) {
	f.Add(httpfile.Link("w", "/x/y", 7))
	f.Add("/files/00000000000000000000000000000000/1/a")
	f.Fuzz(func(t *testing.T, p string) {
		target, err := httpfile.ParseLink(p)
		if err != nil {
			return
		}
		if target.Rev == 0 || !strings.HasPrefix(target.Path, "/") || strings.Contains(target.Path, "//") {
			t.Fatalf("ParseLink(%q) = %+v", p, target)
		}
		if target.Check("w") != (decoded(t, httpfile.Link("w", target.Path, target.Rev)) == p) {
			t.Fatalf("ParseLink(%q) checks for w, but Link spells another path", p)
		}
	})
}
