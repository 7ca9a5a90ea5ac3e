package args_test

import (
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

// TestSchemaCheck decodes calls with getters that agree and disagree with
// testSchema: one that agrees takes its bounds and defaults from it and is
// refused a missing required argument, even one no getter read; one that
// reads an argument the schema does not declare, or as another type,
// panics naming the argument.
func TestSchemaCheck(t *testing.T) {
	schema, err := args.ParseSchema([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	parse := func(call string, decode func(o *args.Object)) error {
		var probs args.Problems
		probs.Check(schema)
		return args.Parse([]byte(call), &probs, decode)
	}
	agrees := func(o *args.Object) {
		o.Str("path", true)
		o.Int("count", false)
		o.Count("size", 0)
		if o.Choice("mode", "b") != "a" || o.Bool("flag", true) {
			t.Error("a getter's default was taken where the schema declares one")
		}
		if elems, ok := o.Array("entries", false); ok {
			for i, e := range elems {
				name := "entries[" + string(rune('0'+i)) + "]"
				n := args.Decode(e, name, name+".", o.Problems())
				n.Str("name", true)
				n.Has("entries")
				n.Finish()
			}
		}
	}
	for _, c := range []struct {
		name, call string
		decode     func(o *args.Object)
		want       string // a substring of the refusal; "" accepted
	}{
		{"agrees", `{"path": "/a", "entries": [{"name": "x"}]}`, agrees, ""},
		{"bounds from the schema", `{"path": "/a", "count": 11}`, agrees, "count: 11 is above the maximum 10"},
		{"a limit with its own message", `{"path": "/a", "count": 11}`, func(o *args.Object) {
			o.Str("path", true)
			o.IntLimit("count", false, func(n int64) error { return args.LimitError("%d is too many", n) })
		}, "count: 11 is too many"},
		{"required not read", `{}`, func(o *args.Object) {}, "path: required string argument is missing"},
		{"nested required not read", `{"path": "/a", "entries": [{}]}`, func(o *args.Object) {
			o.Str("path", true)
			elems, _ := o.Array("entries", false)
			args.Decode(elems[0], "entries[0]", "entries[0].", o.Problems()).Finish()
		}, "entries[0].name: required string argument is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := parse(c.call, c.decode)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Errorf("%v, want %q", err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name   string
		decode func(o *args.Object)
		want   string
	}{
		{"undeclared argument", func(o *args.Object) { o.Has("other") }, "other is not in the input schema"},
		{"other type", func(o *args.Object) { o.Str("count", false) }, "count: the decoder reads string, the input schema declares integer"},
		{"narrower type", func(o *args.Object) { o.Str("size", false) }, "size: the decoder reads string, the input schema declares integer or string"},
		{"other encodings", func(o *args.Object) { o.Encoding("mode") }, `mode: the decoder accepts ["utf-8" "utf8" "base64"], the input schema's enum is ["a" "b"]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), c.want) {
					t.Errorf("panic %v, want %q", r, c.want)
				}
			}()
			_ = parse(`{"path": "/a"}`, c.decode)
		})
	}
}
