package markdown

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/tool"
)

// Tool is one tool to document: its definition as the server registers it
// (and tools/list sends it), the profile that serves it, its long
// reference, the schema of its replies, and examples.
type Tool struct {
	Def     mcp.Tool
	Profile string
	// Reference is the tool's long reference, rendered in place of the
	// short description tools/list sends; "" renders the description.
	Reference string
	// Output is the JSON schema every reply's structured content
	// satisfies, nil for none.
	Output   json.RawMessage
	Examples []Example
}

// Example is one call of a tool and the reply it gets.
type Example struct {
	// Title says what the example shows, e.g. "A text file at a known path".
	Title string `json:"title"`
	// Arguments are the call's arguments, a JSON object.
	Arguments json.RawMessage `json:"arguments"`
	// Reply is the reply's structured content, or, for a tool that replies
	// with text only, that text as a JSON value (a string, or the JSON the
	// text holds).
	Reply json.RawMessage `json:"reply"`
	// IsError is the reply's isError flag.
	IsError bool `json:"is_error,omitempty"`
}

// ErrNoTools reports a call of Write without tools.
var ErrNoTools = errors.New("markdown: no tools to document")

// Write renders tools, in the order given, as Markdown on w: an index
// table, then one section per tool (a level-3 heading with the tool's name,
// which GitHub turns into the anchor the index links to). The output
// depends only on its input, byte for byte. Write is safe for concurrent
// use with distinct writers.
func Write(w io.Writer, tools []Tool) error {
	if len(tools) == 0 {
		return ErrNoTools
	}
	var b bytes.Buffer
	b.WriteString("| tool | profile | what it does |\n|---|---|---|\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s |\n", t.Def.Name, anchor(t.Def.Name), cell(t.Profile), cell(firstSentence(t.Def.Description)))
	}
	for _, t := range tools {
		if err := writeTool(&b, t); err != nil {
			return err
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeTool renders one tool's section.
func writeTool(b *bytes.Buffer, t Tool) error {
	d := t.Def
	fmt.Fprintf(b, "\n### `%s`\n\n", d.Name)
	title := cmp.Or(d.Title, d.Annotations.Title)
	if title != "" {
		fmt.Fprintf(b, "**%s**. ", inline(title))
	}
	a := d.Annotations
	h := tool.Effective(a)
	fmt.Fprintf(b, "Profile `%s`; read-only: %s; destructive: %s; idempotent: %s; open world: %s.\n",
		t.Profile, yes(h.ReadOnly), yes(h.Destructive), yes(h.Idempotent), yes(a.OpenWorldHint == nil || *a.OpenWorldHint))

	text := cmp.Or(t.Reference, d.Description)
	body, security := splitSecurity(text)
	for _, para := range body {
		b.WriteString("\n")
		b.WriteString(paragraph(para))
		b.WriteString("\n")
	}

	b.WriteString("\n#### Arguments\n\n")
	input := d.RawInputSchema
	if input == nil {
		var err error
		if input, err = json.Marshal(d.InputSchema); err != nil {
			return fmt.Errorf("markdown: tool %s: input schema: %w", d.Name, err)
		}
	}
	args, err := arguments(input)
	if err != nil {
		return fmt.Errorf("markdown: tool %s: input schema: %w", d.Name, err)
	}
	if len(args) == 0 {
		b.WriteString("None.\n")
	} else {
		b.WriteString("| argument | type | required | default | constraints | description |\n|---|---|---|---|---|---|\n")
		for _, a := range args {
			req := "optional"
			if a.required {
				req = "required"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n",
				codeCell(a.name), cell(a.typ), req, codeCell(a.def), pipes(a.constraints), cell(a.description))
		}
	}

	if t.Output != nil {
		schema, err := indent(t.Output)
		if err != nil {
			return fmt.Errorf("markdown: tool %s: output schema: %w", d.Name, err)
		}
		fmt.Fprintf(b, "\n#### Reply schema\n\nThe structured content of every reply satisfies this JSON schema (not sent in tools/list, to keep it small).\n\n<details><summary>Schema</summary>\n\n```json\n%s\n```\n\n</details>\n", schema)
	}

	b.WriteString("\n#### Examples\n")
	if len(t.Examples) == 0 {
		b.WriteString("\nNone.\n")
	}
	for _, ex := range t.Examples {
		if err := writeExample(b, d.Name, ex); err != nil {
			return fmt.Errorf("markdown: tool %s: example %q: %w", d.Name, ex.Title, err)
		}
	}

	b.WriteString("\n#### Security\n\n")
	if security == "" {
		b.WriteString("No notes beyond those of the server.\n")
	} else {
		b.WriteString(paragraph(security))
		b.WriteString("\n")
	}
	return nil
}

// writeExample renders one example: the call's arguments and the reply.
func writeExample(b *bytes.Buffer, tool string, ex Example) error {
	args, err := indent(ex.Arguments)
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	fmt.Fprintf(b, "\n%s: `%s` with\n\n```json\n%s\n```\n\n", inline(ex.Title), tool, args)
	what := "replies"
	if ex.IsError {
		what = "fails (isError) with"
	}
	var text string
	if json.Unmarshal(ex.Reply, &text) == nil {
		fmt.Fprintf(b, "%s the text\n\n```text\n%s\n```\n", what, strings.TrimRight(text, "\n"))
		return nil
	}
	reply, err := indent(ex.Reply)
	if err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	fmt.Fprintf(b, "%s\n\n```json\n%s\n```\n", what, reply)
	return nil
}

// indent returns a JSON value indented by two spaces.
func indent(raw json.RawMessage) (string, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return "", err
	}
	return out.String(), nil
}

// yes renders a hint as the reference shows it.
func yes(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

// anchor returns the fragment GitHub gives a heading made of name in code.
func anchor(name string) string {
	return strings.ToLower(strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
			return r
		case r == ' ':
			return '-'
		}
		return -1
	}, name))
}

// firstSentence returns the description up to the end of its first
// sentence (a period followed by a space or the end of the paragraph).
func firstSentence(desc string) string {
	para, _, _ := strings.Cut(desc, "\n")
	if i := strings.Index(para, ". "); i >= 0 {
		return para[:i+1]
	}
	return para
}

// splitSecurity splits a description into its paragraphs and its security
// paragraph (without the "Security:" label).
func splitSecurity(desc string) (body []string, security string) {
	for _, para := range strings.Split(strings.TrimSpace(desc), "\n\n") {
		para = strings.Trim(para, "\n")
		if para == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(para, "Security:"); ok {
			if rest = strings.TrimSpace(rest); rest != "" {
				r, n := utf8.DecodeRuneInString(rest)
				security = string(unicode.ToUpper(r)) + rest[n:]
			}
			continue
		}
		body = append(body, para)
	}
	return body, security
}
