package args

import (
	"fmt"
	"path"
	"strings"
)

// Glob is a file-name pattern in fnmatch syntax, the syntax clients of both
// contracts use: * (any run of characters), ? (one character), [abc] and
// [a-z] (one of a set), [!abc] (one not in the set). It matches one name,
// case-sensitively; a backslash is an ordinary character. The zero Glob
// matches every name. A glob is immutable and safe to share.
type Glob struct {
	pattern string // in path.Match syntax; "" matches everything
}

// maxGlobBytes bounds a pattern.
const maxGlobBytes = 1024

// ParseGlob translates an fnmatch pattern into a glob. "*" and "" match
// everything. A pattern with a slash, or one path.Match cannot parse (an
// unclosed "["), is an error wrapping ErrInvalid.
func ParseGlob(p string) (Glob, error) {
	switch {
	case p == "" || p == "*":
		return Glob{}, nil
	case len(p) > maxGlobBytes:
		return Glob{}, fmt.Errorf("%w: pattern of %d bytes exceeds the limit of %d", ErrInvalid, len(p), maxGlobBytes)
	case strings.Contains(p, "/"):
		return Glob{}, fmt.Errorf("%w: a pattern matches one file name and must not contain '/', got %s", ErrInvalid, Quote(p))
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case ch == '\\':
			b.WriteString(`\\`)
		case ch == '[' && !inClass:
			inClass = true
			b.WriteByte('[')
			if i+1 < len(p) && p[i+1] == '!' {
				b.WriteByte('^')
				i++
			}
		case ch == ']' && inClass:
			inClass = false
			b.WriteByte(']')
		default:
			b.WriteByte(ch)
		}
	}
	g := Glob{pattern: b.String()}
	if _, err := path.Match(g.pattern, ""); err != nil {
		return Glob{}, fmt.Errorf("%w: %s is not a valid pattern (use * ? [abc] [a-z] [!abc]): %v", ErrInvalid, Quote(p), err)
	}
	return g, nil
}

// Match reports whether name matches g.
func (g Glob) Match(name string) bool {
	if g.pattern == "" {
		return true
	}
	ok, _ := path.Match(g.pattern, name)
	return ok
}

// ParseArg sets g from an fnmatch pattern (see ParseGlob), so that Fill
// decodes a Glob field.
func (g *Glob) ParseArg(s string) error {
	parsed, err := ParseGlob(s)
	*g = parsed
	return err
}
