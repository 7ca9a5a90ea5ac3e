package search

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// ErrPattern reports a pattern that cannot be searched for: empty, too
// long, or a regular expression that does not compile.
var ErrPattern = errors.New("invalid search pattern")

// MaxPatternBytes bounds a pattern.
const MaxPatternBytes = 4096

// Pattern is a compiled search pattern. It is immutable and safe for
// concurrent use.
type Pattern struct {
	literal []byte         // the literal to find (lower case when fold); nil for a regexp
	fold    bool           // literal: compare ASCII case-insensitively
	re      *regexp.Regexp // otherwise: multi-line regexp
}

// Compile prepares pattern for searching: a literal string, or with regex
// a regular expression in Go's RE2 syntax. caseSensitive false folds case.
// Errors wrap ErrPattern. It is safe for concurrent use.
func Compile(pattern string, regex, caseSensitive bool) (*Pattern, error) {
	switch {
	case pattern == "":
		return nil, fmt.Errorf("%w: the pattern is empty", ErrPattern)
	case len(pattern) > MaxPatternBytes:
		return nil, fmt.Errorf("%w: pattern of %d bytes exceeds the limit of %d", ErrPattern, len(pattern), MaxPatternBytes)
	case !utf8.ValidString(pattern):
		return nil, fmt.Errorf("%w: the pattern is not valid UTF-8", ErrPattern)
	}
	if !regex {
		switch {
		case caseSensitive:
			return &Pattern{literal: []byte(pattern)}, nil
		case isASCII(pattern):
			return &Pattern{literal: lowerASCII(nil, []byte(pattern)), fold: true}, nil
		}
		pattern = regexp.QuoteMeta(pattern)
	}
	flags := "(?m)"
	if !caseSensitive {
		flags = "(?mi)"
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPattern, err)
	}
	if lineAnchors, ok := textToLineAnchors(flags + pattern); ok {
		if re, err = regexp.Compile(lineAnchors); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrPattern, err)
		}
	}
	return &Pattern{re: re}, nil
}

// textToLineAnchors rewrites the text anchors \A and \z of pattern into
// the line anchors ^ and $, and reports whether it found any. Matching is
// per line, so the two mean the same; but lines finds its candidates in
// the whole buffer, where \A and \z match only at its ends, and would miss
// the lines in between.
func textToLineAnchors(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	found := false
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpBeginText:
			r.Op, found = syntax.OpBeginLine, true
		case syntax.OpEndText:
			r.Op, r.Flags, found = syntax.OpEndLine, r.Flags&^syntax.WasDollar, true
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	return re.String(), found
}

// lines calls fn with the bounds [start, end) of each line of buf that
// matches, in order, until fn returns false. scratch is reused for a
// lower-case copy of buf when folding; lines returns it for the next call.
func (p *Pattern) lines(buf, scratch []byte, fn func(start, end int) bool) []byte {
	hay := buf
	if p.fold {
		scratch = lowerASCII(scratch[:0], buf)
		hay = scratch
	}
	for pos := 0; pos < len(buf); {
		var at int
		if p.re == nil {
			i := bytes.Index(hay[pos:], p.literal)
			if i < 0 {
				return scratch
			}
			at = pos + i
		} else {
			loc := p.re.FindIndex(buf[pos:])
			if loc == nil {
				return scratch
			}
			at = pos + loc[0]
		}
		if at == len(buf) && buf[len(buf)-1] == '\n' {
			return scratch // an empty match after the last newline: no line there
		}
		start := bytes.LastIndexByte(buf[:at], '\n') + 1
		end := len(buf)
		if i := bytes.IndexByte(buf[at:], '\n'); i >= 0 {
			end = at + i
		}
		// A match may run over a newline (a literal with one, a regexp
		// with \s or [^x]): the line only counts when it matches on its
		// own.
		if p.re == nil && at+len(p.literal) <= end || p.re != nil && p.re.Match(buf[start:end]) {
			if !fn(start, end) {
				return scratch
			}
		}
		pos = end + 1
	}
	return scratch
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// lowerASCII appends b with ASCII letters in lower case to dst.
func lowerASCII(dst, b []byte) []byte {
	if cap(dst) < len(b) {
		dst = make([]byte, 0, len(b))
	}
	dst = dst[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
	return dst
}
