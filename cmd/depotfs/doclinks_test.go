package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// mdLink matches the target of an inline Markdown link.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks fails when a relative link in README.md, DESIGN.md or
// docs/*.md names a file that does not exist or a heading its target does
// not have, so moving or renaming a section cannot leave a dead link.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../README.md", "../../DESIGN.md")
	anchors := map[string]map[string]bool{}
	headings := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := map[string]bool{}
		if data, err := os.ReadFile(path); err == nil {
			for _, line := range outsideCode(string(data)) {
				if h, ok := strings.CutPrefix(line, "#"); ok {
					a[anchor(strings.TrimLeft(h, "#"))] = true
				}
			}
		}
		anchors[path] = a
		return a
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range outsideCode(string(data)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				path := f
				if file != "" {
					path = filepath.Join(filepath.Dir(f), file)
					if _, err := os.Stat(path); err != nil {
						t.Errorf("%s: link %s: %v", filepath.Base(f), target, err)
						continue
					}
				}
				if frag != "" && strings.HasSuffix(path, ".md") && !headings(path)[frag] {
					t.Errorf("%s: link %s: %s has no heading with that anchor", filepath.Base(f), target, filepath.Base(path))
				}
			}
		}
	}
}

// outsideCode returns the lines of a Markdown text that are not inside a
// fenced code block.
func outsideCode(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
}

// anchor is the fragment GitHub gives a heading: lower case, letters,
// digits, '-' and '_' kept, spaces turned into '-', the rest dropped.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
