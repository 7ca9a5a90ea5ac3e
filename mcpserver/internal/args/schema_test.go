package args_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
)

// testSchema is an input schema with every kind of declaration the check
// reads: types, a union type, bounds, an enum, a required argument and
// nested objects behind a $ref.
const testSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "size": {"type": ["integer", "string"], "minimum": 0},
    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
    "flag": {"type": "boolean", "default": false},
    "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}}
  },
  "required": ["path"],
  "additionalProperties": false,
  "$defs": {
    "entry": {
      "type": "object",
      "properties": {
        "name": {"type": "string"},
        "entries": {"type": "array", "items": {"$ref": "#/$defs/entry"}}
      },
      "required": ["name"]
    }
  }
}`

// TestSchemaCheck decodes calls with decoders that agree and disagree with
// testSchema, and checks the defects found: none for a decoder that agrees,
// one naming the argument and the difference for each that does not, and
// never a problem for the caller.
func TestSchemaCheck(t *testing.T) {
	schema, err := args.ParseSchema([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	agrees := func(o *args.Object) {
		o.Str("path", true)
		o.Int("count", false)
		o.Count("size", 0)
		o.Choice("mode", "a")
		o.Bool("flag", false)
		if elems, ok := o.Array("entries", false); ok {
			for i, e := range elems {
				name := "entries[" + string(rune('0'+i)) + "]"
				n := args.Decode(e, name, name+".", o.Problems())
				n.Str("name", true)
				if inner, ok := n.Array("entries", false); ok {
					m := args.Decode(inner[0], name+".entries[0]", name+".entries[0].", o.Problems())
					m.Str("name", true)
					m.Finish()
				}
				n.Finish()
			}
		}
	}
	for _, c := range []struct {
		name, call string
		decode     func(o *args.Object)
		want       []string // substrings of the defects, one each
	}{
		{"agrees", `{"path": "/a", "entries": [{"name": "x", "entries": [{"name": "y"}]}]}`, agrees, nil},
		{"agrees on a refused call", `{"count": 0, "entries": [{}]}`, agrees, nil},
		{"undeclared argument", `{"path": "/a"}`, func(o *args.Object) {
			o.Str("path", true)
			o.Has("other")
		}, []string{"other: decoded, but not in the input schema"}},
		{"other type", `{"path": "/a"}`, func(o *args.Object) {
			o.Str("path", true)
			o.Str("count", false)
		}, []string{"count: the decoder reads string, the schema declares integer"}},
		{"narrower type", `{"path": "/a"}`, func(o *args.Object) {
			o.Str("path", true)
			o.Str("size", false)
		}, []string{"size: the schema allows integer, the decoder reads only string"}},
		{"bounds from the schema", `{"path": "/a", "count": 11, "size": -1}`, func(o *args.Object) {
			o.Str("path", true)
			o.Int("count", false)
			o.Int("size", false)
		}, nil},
		{"a limit with its own message", `{"path": "/a", "count": 11}`, func(o *args.Object) {
			o.Str("path", true)
			o.IntLimit("count", false, func(n int64) error { return args.LimitError("%d is too many", n) })
		}, nil},
		{"other default", `{"path": "/a"}`, func(o *args.Object) {
			o.Str("path", true)
			o.Choice("mode", "b")
			o.Bool("flag", true)
		}, []string{`mode: the decoder's default is "b", the schema's "a"`, "flag: the decoder's default is true, the schema's false"}},
		{"other encodings", `{"path": "/a"}`, func(o *args.Object) {
			o.Str("path", true)
			o.Encoding("mode")
		}, []string{`mode: the decoder accepts ["base64" "utf-8" "utf8"], the schema's enum is ["a" "b"]`}},
		{"required not refused", `{}`, func(o *args.Object) {
			o.Str("path", false)
		}, []string{"path: required by the schema, but a call without it was not refused naming it"}},
		{"nested required not refused", `{"path": "/a", "entries": [{}]}`, func(o *args.Object) {
			o.Str("path", true)
			elems, _ := o.Array("entries", false)
			n := args.Decode(elems[0], "entries[0]", "entries[0].", o.Problems())
			n.Str("name", false)
			n.Finish()
		}, []string{"entries[0].name: required by the schema"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var probs args.Problems
			probs.Check(schema)
			before := 0
			err := args.Parse([]byte(c.call), &probs, func(o *args.Object) {
				c.decode(o)
				before = probs.Len()
			})
			got := probs.Defects()
			if len(got) != len(c.want) {
				t.Fatalf("defects %q, want %d like %q", got, len(c.want), c.want)
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("defect %q, want %q", got[i], w)
				}
			}
			if probs.Len() != before || c.want != nil && err != nil && slices.ContainsFunc(c.want, func(w string) bool { return strings.Contains(err.Error(), w) }) {
				t.Errorf("a defect reached the caller's problems: %v", err)
			}
		})
	}
}
