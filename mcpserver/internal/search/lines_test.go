package search

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// naive is the reference: split into lines and test each on its own.
func naive(t testing.TB, buf []byte, pattern string, regex, caseSensitive bool) [][2]int {
	t.Helper()
	var out [][2]int
	var re *regexp.Regexp
	if regex {
		flags := "(?m)"
		if !caseSensitive {
			flags = "(?mi)"
		}
		re = regexp.MustCompile(flags + pattern)
	}
	start := 0
	for start < len(buf) {
		end := len(buf)
		if i := bytes.IndexByte(buf[start:], '\n'); i >= 0 {
			end = start + i
		}
		line := buf[start:end]
		var ok bool
		switch {
		case regex:
			ok = re.Match(line)
		case caseSensitive:
			ok = bytes.Contains(line, []byte(pattern))
		default: // an ASCII literal folds ASCII letters only
			ok = bytes.Contains(lowerASCII(nil, line), lowerASCII(nil, []byte(pattern)))
		}
		if ok {
			out = append(out, [2]int{start, end})
		}
		start = end + 1
	}
	return out
}

func collect(p *Pattern, buf []byte) [][2]int {
	var out [][2]int
	p.lines(buf, nil, func(s, e int) bool {
		out = append(out, [2]int{s, e})
		return true
	})
	return out
}

func TestLines(t *testing.T) {
	text := "alpha beta\nGamma\n\nbeta\r\nlast line without newline"
	for _, tt := range []struct {
		name          string
		pattern       string
		regex, cs     bool
		wantLineCount int
	}{
		{"literal", "beta", false, true, 2},
		{"literal case", "gamma", false, true, 0},
		{"literal folded", "GAMMA", false, false, 1},
		{"regexp anchors", "^beta", true, true, 1},
		{"regexp end", "beta$", true, true, 1},
		{"regexp across newline only counts whole lines", `beta\s+Gamma`, true, true, 0},
		{"empty-matching regexp matches every line", "x*", true, true, 5},
		{"empty line", "^$", true, true, 1},
		{"dot never crosses lines", "a.G", true, true, 0},
		{"unicode fold", "ΣΊΣΥΦΟΣ", false, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte(text)
			if strings.Contains(tt.name, "unicode") {
				buf = []byte("σίσυφος\nother")
			}
			p, err := Compile(tt.pattern, tt.regex, tt.cs)
			if err != nil {
				t.Fatal(err)
			}
			got := collect(p, buf)
			if len(got) != tt.wantLineCount {
				t.Errorf("%d lines %v, want %d", len(got), got, tt.wantLineCount)
			}
			if !tt.regex && !strings.Contains(tt.name, "unicode") {
				if want := naive(t, buf, tt.pattern, false, tt.cs); len(want) != len(got) {
					t.Errorf("reference finds %v, lines %v", want, got)
				}
			}
		})
	}
}

// FuzzLines checks lines against the line-by-line reference for literals
// and regular expressions, both cases.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\nb\nab\n"), "a", false, true)
	f.Add([]byte("x\r\ny\n\n"), "^$", true, true)
	f.Add([]byte("FOO foo\nfOo"), "foo", false, false)
	f.Add([]byte("a b\nc"), `\s`, true, false)
	f.Fuzz(func(t *testing.T, buf []byte, pattern string, regex, cs bool) {
		p, err := Compile(pattern, regex, cs)
		if err != nil {
			return
		}
		if !regex && !cs && !isASCII(pattern) {
			regex, pattern = true, regexp.QuoteMeta(pattern)
		}
		got := collect(p, buf)
		want := naive(t, buf, pattern, regex, cs)
		if len(got) != len(want) {
			t.Fatalf("lines %v, reference %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("lines %v, reference %v", got, want)
			}
		}
	})
}
