package markdown

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// paragraph renders a paragraph of plain text as Markdown: special
// characters escaped, each line break kept (as a hard break, or as the
// start of a list item when the next line is one), indentation kept so
// that nested lists nest.
func paragraph(p string) string {
	lines := strings.Split(p, "\n")
	var b strings.Builder
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		b.WriteString(line[:len(line)-len(trimmed)])
		b.WriteString(lineStart(trimmed))
		if i == len(lines)-1 {
			break
		}
		if next := strings.TrimLeft(lines[i+1], " "); strings.HasPrefix(next, "- ") {
			b.WriteString("\n")
		} else {
			b.WriteString("  \n")
		}
	}
	return b.String()
}

// lineStart escapes a line of text, keeping a leading "- " as a list item
// and escaping other characters that would start a block (a heading, a
// quote, a numbered list) at the beginning of a line.
func lineStart(line string) string {
	if rest, ok := strings.CutPrefix(line, "- "); ok {
		return "- " + inline(rest)
	}
	s := inline(line)
	if s == "" {
		return s
	}
	switch s[0] {
	case '#', '>', '+', '=':
		return `\` + s
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 && (s[i] == '.' || s[i] == ')') {
		return s[:i] + `\` + s[i:]
	}
	return s
}

// inline escapes the characters of plain text that Markdown would read as
// markup: backslashes, backticks, asterisks, brackets, angle brackets (HTML
// tags), tildes and underscores that could start or end emphasis (not those
// inside a word, such as guide_cache_file).
func inline(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case '\\', '`', '*', '[', ']', '<', '>', '~':
			b.WriteByte('\\')
		case '_':
			before, _ := utf8.DecodeLastRuneInString(s[:i])
			after, _ := utf8.DecodeRuneInString(s[i+1:])
			if !wordRune(before) || !wordRune(after) {
				b.WriteByte('\\')
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

func wordRune(r rune) bool {
	return r != utf8.RuneError && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

// cell renders plain text for a table cell: escaped, on one line, with
// pipes escaped (GFM splits cells on them).
func cell(s string) string {
	return pipes(inline(strings.Join(strings.Fields(s), " ")))
}

// pipes escapes the pipes of Markdown destined for a table cell, including
// those inside code spans, as GFM requires.
func pipes(md string) string { return strings.ReplaceAll(md, "|", `\|`) }

// code returns s as a Markdown code span, with a delimiter longer than any
// run of backticks inside it.
func code(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	delim := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return delim + s + delim
}

// codeCell renders s as a code span in a table cell, or nothing when s is
// empty.
func codeCell(s string) string {
	if s == "" {
		return ""
	}
	return pipes(code(s))
}
