package args

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Schema is a tool's input schema as its decoder reads it: the one source
// of each integer argument's bounds and each choice's enum (Int, Count,
// IntLimit, Choice), and what every other fact a getter states is checked
// against: the argument is declared, has the JSON type the getter reads,
// the default the getter falls back to, and a call missing a required
// argument is refused naming it. The schema is the published one, what
// tools/list sends; a decoder that disagrees with it is a defect the Problems record apart from the call's problems (see
// Problems.Check and Problems.Defects). A Schema is immutable, safe for
// concurrent use.
type Schema struct {
	root *node
}

// node is the part of a JSON Schema the check reads.
type node struct {
	Type       json.RawMessage  `json:"type"`
	Properties map[string]*node `json:"properties"`
	Required   []string         `json:"required"`
	Items      *node            `json:"items"`
	Enum       []any            `json:"enum"`
	Default    json.RawMessage  `json:"default"`
	Minimum    *float64         `json:"minimum"`
	Maximum    *float64         `json:"maximum"`
	Ref        string           `json:"$ref"`
	Defs       map[string]*node `json:"$defs"`
}

// ParseSchema reads a tool's input schema.
func ParseSchema(raw []byte) (*Schema, error) {
	var root node
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return &Schema{root: &root}, nil
}

// resolve follows a "#/$defs/NAME" reference of n.
func (s *Schema) resolve(n *node) *node {
	for n != nil && n.Ref != "" {
		n = s.root.Defs[strings.TrimPrefix(n.Ref, "#/$defs/")]
	}
	return n
}

// object returns the schema of the object an Object with prefix decodes
// ("" the arguments, "files[2]." an element of files, "entries[0].entries[1]."
// one nested deeper), or nil when the schema has none there.
func (s *Schema) object(prefix string) *node {
	n := s.root
	for _, seg := range strings.Split(strings.TrimSuffix(prefix, "."), ".") {
		if seg == "" {
			continue
		}
		name, _, indexed := strings.Cut(seg, "[")
		n = s.resolve(n)
		if n == nil || n.Properties[name] == nil {
			return nil
		}
		n = s.resolve(n.Properties[name])
		if indexed {
			n = s.resolve(n.Items)
		}
	}
	return s.resolve(n)
}

// types returns the JSON types n allows.
func (n *node) types() []string {
	var one string
	if json.Unmarshal(n.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(n.Type, &many)
	return many
}

// accepts is what a getter states about its argument.
type accepts struct {
	typ     string   // the JSON type read; "" any
	choices []string // the strings accepted, where the decoder lists them; nil: any
	fold    bool     // choices compare case-insensitively
	def     any      // the value taken when the argument is absent; nil: none stated
}

// prop returns the schema of field in the object at prefix, nil when the
// schema does not declare it.
func (s *Schema) prop(prefix, field string) *node {
	obj := s.object(prefix)
	if obj == nil {
		return nil
	}
	return s.resolve(obj.Properties[field])
}

// check compares what a getter of the object at prefix accepts of field
// with the schema.
func (s *Schema) check(probs *Problems, prefix, field string, a accepts) {
	name := prefix + field
	p := s.prop(prefix, field)
	if p == nil {
		probs.defect("%s: decoded, but not in the input schema", name)
		return
	}
	if a.typ != "" {
		ok := map[string]bool{a.typ: true}
		if a.typ == "integer" {
			ok["string"] = true // Int takes decimal digits in a string too
		}
		types := p.types()
		if !slices.Contains(types, a.typ) {
			probs.defect("%s: the decoder reads %s, the schema declares %s", name, a.typ, strings.Join(types, " or "))
		} else {
			for _, t := range types {
				if !ok[t] {
					probs.defect("%s: the schema allows %s, the decoder reads only %s", name, t, a.typ)
				}
			}
		}
	}
	if a.choices != nil {
		s.checkChoices(probs, name, p.Enum, a.choices, a.fold)
	}
	if a.def != nil && p.Default != nil {
		var want, got any
		b, _ := json.Marshal(a.def) // a bool, an integer or a string
		if json.Unmarshal(p.Default, &want) != nil || json.Unmarshal(b, &got) != nil || !reflect.DeepEqual(want, got) {
			probs.defect("%s: the decoder's default is %s, the schema's %s", name, b, p.Default)
		}
	}
}

// checkChoices compares the strings a getter accepts with the schema's
// enum, as sets (case-folded when the getter folds case).
func (s *Schema) checkChoices(probs *Problems, name string, enum []any, choices []string, fold bool) {
	norm := func(v string) string {
		if fold {
			return strings.ToLower(v)
		}
		return v
	}
	var want, got []string
	for _, e := range enum {
		if str, ok := e.(string); ok {
			want = append(want, norm(str))
		}
	}
	for _, c := range choices {
		got = append(got, norm(c))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(slices.Compact(want), slices.Compact(got)) {
		probs.defect("%s: the decoder accepts %q, the schema's enum is %q", name, got, want)
	}
}

// checkRequired records a required argument of the object at prefix that
// the call did not send and the decoder did not refuse: the schema says a
// call without it is invalid, so the decoder must say so too, by name.
func (s *Schema) checkRequired(prefix string, sent map[string]json.RawMessage, probs *Problems) {
	obj := s.object(prefix)
	if obj == nil || probs.Full() {
		return
	}
	for _, field := range obj.Required {
		if _, ok := sent[field]; ok {
			continue
		}
		name := prefix + field
		if !slices.ContainsFunc(probs.list, func(p problem) bool { return p.field == name }) {
			probs.defect("%s: required by the schema, but a call without it was not refused naming it", name)
		}
	}
}
