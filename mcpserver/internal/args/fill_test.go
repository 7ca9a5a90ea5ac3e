package args_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/depotfs/depotfs/mcpserver/internal/args"
)

// fillSchema declares one argument of each kind Fill reads.
const fillSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string"},
    "mode": {"type": "string", "enum": ["a", "b"], "default": "b"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    "since": {"type": "integer", "minimum": 0},
    "flag": {"type": "boolean", "default": true},
    "names": {"type": "array", "items": {"type": "string"}},
    "globs": {"type": "array", "items": {"type": "string"}},
    "glob": {"type": "string", "default": "*.go"}
  },
  "required": ["path"]
}`

// fillArgs are fillSchema's arguments.
type fillArgs struct {
	Path  string      `json:"path" args:"path"`
	Mode  string      `json:"mode"`
	Count int64       `json:"count"`
	Since *uint64     `json:"since"`
	Flag  bool        `json:"flag"`
	Names []string    `json:"names"`
	Globs []args.Glob `json:"globs"`
	Glob  args.Glob   `json:"glob"`
}

// TestFill decodes calls into fillArgs: the schema's defaults where an
// argument is absent, nil for an absent optional pointer, and every
// problem refused with the message the getters give.
func TestFill(t *testing.T) {
	schema, err := args.ParseSchema([]byte(fillSchema))
	if err != nil {
		t.Fatal(err)
	}
	fill := func(raw string) (fillArgs, error) {
		var probs args.Problems
		probs.Check(schema)
		var a fillArgs
		return a, args.Fill(json.RawMessage(raw), &probs, &a)
	}

	a, err := fill(`{"path": "/x/../y"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path != "/y" || a.Mode != "b" || a.Count != 3 || a.Since != nil || !a.Flag || a.Names != nil || !a.Glob.Match("m.go") || a.Glob.Match("m.c") {
		t.Errorf("defaults: %+v", a)
	}

	a, err = fill(`{"path": "y", "mode": "a", "count": "7", "since": 0, "flag": false, "names": ["p", "q"], "globs": ["*.c"], "glob": "*"}`)
	if err != nil {
		t.Fatal(err)
	}
	if a.Mode != "a" || a.Count != 7 || a.Since == nil || *a.Since != 0 || a.Flag || !reflect.DeepEqual(a.Names, []string{"p", "q"}) || len(a.Globs) != 1 || !a.Globs[0].Match("x.c") || !a.Glob.Match("m.c") {
		t.Errorf("given: %+v", a)
	}

	for raw, want := range map[string][]string{
		`{}`:                              {"path: required string argument is missing"},
		`{"path": "y", "mode": "c"}`:      {`mode: must be one of "a", "b", got "c"`},
		`{"path": "y", "count": 11}`:      {"count: 11 is above the maximum 10"},
		`{"path": "y", "since": null}`:    {"since: expected integer, got null"},
		`{"path": "y", "names": [1]}`:     {"names[0]: expected a string, got number"},
		`{"path": "y", "globs": ["a/b"]}`: {"globs[0]: a pattern matches one file name"},
		`{"path": "y", "other": 1}`:       {`unknown argument(s) "other"; accepted: count, flag, glob, globs, mode, names, path, since`},
		`[]`:                              {"arguments: expected an object, got array"},
	} {
		_, err := fill(raw)
		if err == nil {
			t.Errorf("%s: accepted", raw)
			continue
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q, without %q", raw, err, w)
			}
		}
	}
}
