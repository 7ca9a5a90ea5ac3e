package markdown_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/depotfs/depotfs/mcpserver/internal/markdown"
)

// sample is a tool exercising every feature of an input schema the
// renderer knows: types (one, several, arrays of objects through a
// recursive reference), defaults, enums, patterns, bounds.
func sample() markdown.Tool {
	return markdown.Tool{
		Profile: "fs",
		Def: mcp.Tool{
			Name:        "put_tree",
			Title:       "Put a tree",
			Description: "Store a tree of files. More text.\n\nArguments:\n- path (string): where, e.g. <dir>/*.go\n  - nested item\nExample:\n{\"path\": \"/a\"}\n{\"path\": \"/b\"}\n\nSecurity: paths never leave the depot; see [notes].",
			RawInputSchema: json.RawMessage(`{
				"type": "object",
				"properties": {
					"path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Depot path | of the tree."},
					"mode": {"type": "string", "pattern": "^(0o|0)?[0-7]{1,3}$", "default": "0644"},
					"mtime": {"type": ["string", "number"]},
					"count": {"type": "integer", "minimum": 1, "maximum": 65536},
					"kind": {"enum": ["file", "directory"]},
					"entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}, "maxItems": 10}
				},
				"required": ["path", "entries"],
				"$defs": {
					"entry": {
						"type": "object",
						"properties": {
							"name": {"type": "string", "description": "A name."},
							"entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}}
						},
						"required": ["name"]
					}
				}
			}`),
			Annotations: mcp.ToolAnnotation{
				ReadOnlyHint:    mcp.ToBoolPtr(false),
				DestructiveHint: mcp.ToBoolPtr(true),
				IdempotentHint:  mcp.ToBoolPtr(true),
			},
		},
		Examples: []markdown.Example{
			{Title: "A small tree", Arguments: json.RawMessage(`{"path":"/a","entries":[]}`), Reply: json.RawMessage(`{"success":true}`)},
			{Title: "Plain text", Arguments: json.RawMessage(`{}`), Reply: json.RawMessage(`"line 1\nline 2\n"`)},
			{Title: "A failure", Arguments: json.RawMessage(`{"path":""}`), Reply: json.RawMessage(`{"error":"bad"}`), IsError: true},
		},
	}
}

func render(t *testing.T, tools ...markdown.Tool) string {
	t.Helper()
	var b bytes.Buffer
	if err := markdown.Write(&b, tools); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return b.String()
}

func TestWrite(t *testing.T) {
	out := render(t, sample())
	for _, want := range []string{
		"| [`put_tree`](#put_tree) | fs | Store a tree of files. |",
		"\n### `put_tree`\n\n**Put a tree**. Profile `fs`; read-only: no; destructive: yes; idempotent: yes; open world: yes.\n",
		"| `path` | string | required |  | length 1 to 4096 | Depot path \\| of the tree. |",
		"| `mode` | string | optional | `\"0644\"` | matches `^(0o\\|0)?[0-7]{1,3}$` |  |",
		"| `mtime` | string or number | optional |",
		"| `count` | integer | optional |  | value 1 to 65536 |",
		"| `kind` | enum | optional |  | one of `\"file\"`, `\"directory\"` |",
		"| `entries` | array of object | required |  | items ≤ 10 |",
		"| `entries[].name` | string | required |  |  | A name. |",
		"| `entries[].entries` | array of object | optional |  |  | Same shape as its parent. |",
		"- path (string): where, e.g. \\<dir\\>/\\*.go\n  - nested item  \nExample:  \n{\"path\": \"/a\"}  \n{\"path\": \"/b\"}\n",
		"A small tree: `put_tree` with\n\n```json\n{\n  \"path\": \"/a\",\n  \"entries\": []\n}\n```\n\nreplies\n\n```json\n{\n  \"success\": true\n}\n```\n",
		"replies the text\n\n```text\nline 1\nline 2\n```\n",
		"fails (isError) with\n\n```json\n{\n  \"error\": \"bad\"\n}\n```\n",
		"#### Security\n\nPaths never leave the depot; see \\[notes\\].\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n--- output:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Security: paths") {
		t.Error("the security paragraph is also in the description")
	}
	if strings.Count(out, "entries[].entries") != 1 {
		t.Error("a recursive reference was expanded more than once")
	}
	if again := render(t, sample()); again != out {
		t.Error("two renderings of the same tools differ")
	}
}

// TestWriteReference: a tool with a long reference and an output schema is
// documented by the reference (not the short description tools/list sends,
// which still gives the index its summary) and shows the schema.
func TestWriteReference(t *testing.T) {
	tool := markdown.Tool{
		Profile:   "guide",
		Def:       mcp.Tool{Name: "ping", Description: "Ping briefly. Short."},
		Reference: "Ping at length.\n\nSecurity: none needed.",
		Output:    json.RawMessage(`{"type":"object","properties":{"pong":{"type":"boolean"}}}`),
	}
	out := render(t, tool)
	for _, want := range []string{
		"| [`ping`](#ping) | guide | Ping briefly. |",
		"\nPing at length.\n",
		"#### Security\n\nNone needed.\n",
		"#### Reply schema\n",
		"```json\n{\n  \"type\": \"object\",\n  \"properties\": {\n    \"pong\": {\n      \"type\": \"boolean\"\n    }\n  }\n}\n```\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n--- output:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Short.") {
		t.Errorf("the short description is rendered beside the reference:\n%s", out)
	}
	tool.Output = json.RawMessage(`{`)
	if err := markdown.Write(&bytes.Buffer{}, []markdown.Tool{tool}); err == nil || !strings.Contains(err.Error(), "output schema") {
		t.Errorf("Write with a malformed output schema: %v", err)
	}
}

func TestWriteEdgeCases(t *testing.T) {
	bare := markdown.Tool{Profile: "guide", Def: mcp.Tool{Name: "ping", Description: "Ping."}}
	out := render(t, bare)
	// Hints left out are the specification's defaults.
	for _, want := range []string{"#### Arguments\n\nNone.\n", "#### Examples\n\nNone.\n", "No notes beyond those of the server.",
		"read-only: no; destructive: yes; idempotent: no; open world: yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if err := markdown.Write(&bytes.Buffer{}, nil); !errors.Is(err, markdown.ErrNoTools) {
		t.Errorf("Write(nil) = %v, want ErrNoTools", err)
	}
	broken := sample()
	broken.Def.RawInputSchema = json.RawMessage(`{"properties": {"x": {"$ref": "#/$defs/missing"}}}`)
	if err := markdown.Write(&bytes.Buffer{}, []markdown.Tool{broken}); err == nil || !strings.Contains(err.Error(), "no such definition") {
		t.Errorf("Write with a dangling reference: %v", err)
	}
}

func TestEscaping(t *testing.T) {
	for _, tc := range []struct{ desc, want string }{
		{"guide_cache_file and _meta and snake_", "guide_cache_file and \\_meta and snake\\_"},
		{"a `b` *c* [d](e) <f> ~g~ h\\i", "a \\`b\\` \\*c\\* \\[d\\](e) \\<f\\> \\~g\\~ h\\\\i"},
		{"# not a heading", "\\# not a heading"},
		{"> not a quote", "\\> not a quote"},
		{"1. not a list", "1\\. not a list"},
		{"- a list item", "- a list item"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			tool := markdown.Tool{Profile: "p", Def: mcp.Tool{Name: "t", Description: "First.\n\n" + tc.desc}}
			if out := render(t, tool); !strings.Contains(out, "\n"+tc.want+"\n") {
				t.Errorf("want line %q in\n%s", tc.want, out)
			}
		})
	}
}
