package httpfile

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/depotfs/depotfs/internal/depotpath"
)

// LinkPrefix is the URL path below which resource links are served.
const LinkPrefix = "/files/"

// ErrLink is the error of a URL path that is not a well-formed link. Its
// text names nothing: whoever sent a wrong link learns only that it is
// wrong.
var ErrLink = errors.New("no such link")

// tagLen is the number of hex digits of a link's tag.
const tagLen = 32

// Link returns the URL path of the resource link to the file at clean
// path p as of revision rev, for the caller whose identity key is who:
// LinkPrefix, a tag, the revision and the path, each component
// percent-encoded. The tag is a hash of who, rev and p: a request from
// another identity computes another tag and is answered as for a link
// that never existed (see Check). It is a binding, not a secret: the
// permission to read p is still decided for every request.
func Link(who, p string, rev uint64) string {
	var b strings.Builder
	b.WriteString(LinkPrefix)
	b.WriteString(tag(who, p, rev))
	b.WriteByte('/')
	b.WriteString(strconv.FormatUint(rev, 10))
	for _, part := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(part))
	}
	return b.String()
}

// Target is the file a link names.
type Target struct {
	Path string // clean depot path
	Rev  uint64 // the revision the file is read at
	tag  string
}

// ParseLink reads the decoded URL path of a request for a link (as
// net/http's URL.Path holds it). Anything malformed, including a path
// that depotpath.Clean refuses or changes, fails with ErrLink.
func ParseLink(urlPath string) (Target, error) {
	rest, ok := strings.CutPrefix(urlPath, LinkPrefix)
	if !ok {
		return Target{}, ErrLink
	}
	tg, rest, ok := strings.Cut(rest, "/")
	if !ok || len(tg) != tagLen {
		return Target{}, ErrLink
	}
	revText, p, ok := strings.Cut(rest, "/")
	if !ok {
		return Target{}, ErrLink
	}
	rev, err := strconv.ParseUint(revText, 10, 64)
	if err != nil || rev == 0 || strconv.FormatUint(rev, 10) != revText {
		return Target{}, ErrLink
	}
	p = "/" + p
	clean, err := depotpath.Clean(p)
	if err != nil || clean != p || clean == depotpath.Root {
		return Target{}, ErrLink
	}
	return Target{Path: clean, Rev: rev, tag: tg}, nil
}

// Check reports whether the link was handed to the identity whose key is
// who, in constant time.
func (t Target) Check(who string) bool {
	return subtle.ConstantTimeCompare([]byte(t.tag), []byte(tag(who, t.Path, t.Rev))) == 1
}

// tag binds a link to who, p and rev. The fields are length-prefixed, so
// no two triples hash alike by moving bytes between them.
func tag(who, p string, rev uint64) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "depotfs-link\x00%d:%s%d:%s%d", len(who), who, len(p), p, rev))
	return hex.EncodeToString(sum[:tagLen/2])
}
