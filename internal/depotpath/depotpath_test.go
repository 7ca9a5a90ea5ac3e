package depotpath_test

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/depotfs/depotfs/internal/depotpath"
	"golang.org/x/text/unicode/norm"
)

func TestClean(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"/", "/"},
		{"a", "/a"},
		{"/a/b/c.txt", "/a/b/c.txt"},
		{"//a///b//", "/a/b"},
		{`a\b\c`, "/a/b/c"},
		{`C:\x`, "/C:/x"},
		{"/a/./b/.", "/a/b"},
		{"/a/b/../c", "/a/c"},
		{"/a/..", "/"},
		{"./x", "/x"},
		{"/e\u0301", "/\u00e9"}, // NFD becomes NFC
		{"/with space/ünï", "/with space/ünï"},
		{"/" + strings.Repeat("x", 255), "/" + strings.Repeat("x", 255)},
		{"/%2e%2e/%2E%2E", "/%2e%2e/%2E%2E"},       // not decoded: literal names
		{"/a\uff0f..\uff0fb", "/a\uff0f..\uff0fb"}, // a fullwidth solidus is no separator
		{"/.../x", "/.../x"},
		{"/\uff0e\uff0e\uff0e", "/\uff0e\uff0e\uff0e"}, // reads as "...", an ordinary name
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := depotpath.Clean(tt.in)
			if err != nil {
				t.Fatalf("Clean(%q) error: %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestCleanRejects(t *testing.T) {
	long := strings.Repeat("/"+strings.Repeat("d", 200), 21)
	tests := []struct {
		name, in string
		want     error
	}{
		{"empty", "", depotpath.ErrInvalid},
		{"nul", "/a\x00b", depotpath.ErrInvalid},
		{"newline", "/a\nb", depotpath.ErrInvalid},
		{"escape char", "/a\x1bb", depotpath.ErrInvalid},
		{"del", "/a\x7fb", depotpath.ErrInvalid},
		{"c1 control", "/a\u0085b", depotpath.ErrInvalid},
		{"invalid utf8", "/a\xffb", depotpath.ErrInvalid},
		{"replacement char", "/a\ufffdb", depotpath.ErrInvalid},
		{"256-byte component", "/" + strings.Repeat("x", 256), depotpath.ErrInvalid},
		{"path over 4096 bytes", long, depotpath.ErrInvalid},
		{"dotdot at root", "/..", depotpath.ErrEscapes},
		{"relative escape", "../etc/passwd", depotpath.ErrEscapes},
		{"deep escape", "/a/../../b", depotpath.ErrEscapes},
		{"backslash escape", `..\..\x`, depotpath.ErrEscapes},
		{"fullwidth dots", "/a/\uff0e\uff0e/etc", depotpath.ErrEscapes},
		{"two dot leader", "/a/\u2025", depotpath.ErrEscapes},
		{"one dot leaders", "/\u2024\u2024/x", depotpath.ErrEscapes},
		{"small full stops", "/\ufe52\ufe52", depotpath.ErrEscapes},
		{"fullwidth dot", "/a/\uff0e/b", depotpath.ErrInvalid},
		{"rtl override", "/invoice\u202efdp.exe", depotpath.ErrInvalid},
		{"rtl isolate", "/a\u2067b\u2069", depotpath.ErrInvalid},
		{"left-to-right mark", "/a\u200eb", depotpath.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := depotpath.Clean(tt.in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Clean(%q) = %q, %v; want error %v", tt.in, got, err, tt.want)
			}
			var pe *depotpath.Error
			if !errors.As(err, &pe) || pe.Reason == "" {
				t.Errorf("error %v carries no reason", err)
			}
		})
	}
}

func TestCleanName(t *testing.T) {
	for _, ok := range []string{"report.pdf", "a b", "e\u0301"} {
		if _, err := depotpath.CleanName(ok); err != nil {
			t.Errorf("CleanName(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", `a\b`, "x\x00", strings.Repeat("n", 256)} {
		if got, err := depotpath.CleanName(bad); !errors.Is(err, depotpath.ErrInvalid) {
			t.Errorf("CleanName(%q) = %q, %v; want ErrInvalid", bad, got, err)
		}
	}
}

func TestSplitJoin(t *testing.T) {
	tests := []struct{ p, dir, name string }{
		{"/", "/", ""},
		{"/a", "/", "a"},
		{"/a/b", "/a", "b"},
		{"/a/b/c", "/a/b", "c"},
	}
	for _, tt := range tests {
		dir, name := depotpath.Split(tt.p)
		if dir != tt.dir || name != tt.name {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", tt.p, dir, name, tt.dir, tt.name)
		}
		if tt.p != "/" && depotpath.Join(dir, name) != tt.p {
			t.Errorf("Join(Split(%q)) = %q", tt.p, depotpath.Join(dir, name))
		}
	}
}

func TestWithin(t *testing.T) {
	tests := []struct {
		p, prefix string
		want      bool
	}{
		{"/projects/a", "/projects/a", true},
		{"/projects/a/x", "/projects/a", true},
		{"/projects/abc", "/projects/a", false},
		{"/projects", "/projects/a", false},
		{"/anything", "/", true},
	}
	for _, tt := range tests {
		if got := depotpath.Within(tt.p, tt.prefix); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.prefix, got, tt.want)
		}
	}
}

func TestParents(t *testing.T) {
	got := strings.Join(depotpath.Parents("/a/b/c"), ",")
	if got != "/,/a,/a/b" {
		t.Errorf("Parents(/a/b/c) = %s", got)
	}
	if len(depotpath.Parents("/")) != 0 {
		t.Errorf("Parents(/) not empty")
	}
}

// FuzzClean checks the invariants every clean path must hold, whatever an
// agent sends. Beyond being clean, valid and idempotent, nothing may
// normalize to an escape: a path without a literal ".." component stays
// below any directory it is joined to (so percent-encoding, NFC
// composition or lookalike dots never climb), and no component reads as
// "." or ".." in Unicode compatibility form (fullwidth or leader dots) or
// carries a bidirectional control that could disguise it. The seed corpus
// is in testdata/fuzz/FuzzClean.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"/", "a/b", `..\x`, "/a/../b", "e\u0301", "/a\x00", "//./", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := depotpath.Clean(in)
		if err != nil {
			if !errors.Is(err, depotpath.ErrInvalid) && !errors.Is(err, depotpath.ErrEscapes) {
				t.Fatalf("Clean(%q) error %v wraps neither sentinel", in, err)
			}
		} else {
			checkClean(t, in, p)
		}
		if hasDotDot(in) {
			return
		}
		const base = "/base/dir"
		joined, err := depotpath.Clean(base + "/" + in)
		if err == nil && !depotpath.Within(joined, base) {
			t.Fatalf("%q has no \"..\" component, yet joined to %s it normalizes to %q, outside", in, base, joined)
		}
		if errors.Is(err, depotpath.ErrEscapes) && !hasLookalikeDots(in) {
			t.Fatalf("%q has no \"..\" component, yet joined to %s it is refused as an escape: %v", in, base, err)
		}
	})
}

// checkClean checks the invariants of a clean path p made from in.
func checkClean(t *testing.T, in, p string) {
	t.Helper()
	if !strings.HasPrefix(p, "/") || !utf8.ValidString(p) || !norm.NFC.IsNormalString(p) {
		t.Fatalf("Clean(%q) = %q: not absolute, UTF-8 and NFC", in, p)
	}
	if len(p) > depotpath.MaxPathBytes {
		t.Fatalf("Clean(%q) = %d bytes", in, len(p))
	}
	if p != "/" {
		for _, c := range strings.Split(p[1:], "/") {
			if c == "" || c == "." || c == ".." || len(c) > depotpath.MaxComponentBytes || strings.Contains(c, `\`) {
				t.Fatalf("Clean(%q) = %q has bad component %q", in, p, c)
			}
			if k := norm.NFKC.String(c); k == "." || k == ".." {
				t.Fatalf("Clean(%q) = %q has component %q, which reads as %q", in, p, c, k)
			}
		}
	}
	for _, r := range p {
		if r == 0 || unicode.IsControl(r) || r == utf8.RuneError || isBidiControl(r) {
			t.Fatalf("Clean(%q) = %q contains %U", in, p, r)
		}
	}
	again, err := depotpath.Clean(p)
	if err != nil || again != p {
		t.Fatalf("Clean not idempotent: Clean(%q) = %q, Clean(that) = %q, %v", in, p, again, err)
	}
}

// hasDotDot reports whether s has a literal ".." component, with either
// separator.
func hasDotDot(s string) bool {
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c == ".." {
			return true
		}
	}
	return false
}

// hasLookalikeDots reports whether a component of s reads as ".." in
// Unicode compatibility form without being "..".
func hasLookalikeDots(s string) bool {
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == '\\' }) {
		if c != ".." && norm.NFKC.String(norm.NFC.String(c)) == ".." {
			return true
		}
	}
	return false
}

// isBidiControl reports the Unicode bidirectional formatting characters
// that can make a name display as something else (Trojan Source).
func isBidiControl(r rune) bool {
	return r == 0x061C || r == 0x200E || r == 0x200F || r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069
}
