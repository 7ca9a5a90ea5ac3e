package args

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Schema is a tool's input schema as its decoder reads it, the published
// one that tools/list sends: the one source of each argument's bounds,
// choices and default (Int, IntLimit, Count, Bool, Choice, Fill) and of
// which arguments a call must send (Object.Finish refuses a missing one
// that no getter refused). A getter that reads an argument the schema does
// not declare, or as another JSON type, panics (see Problems.Check). A
// Schema is immutable, safe for concurrent use.
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

// prop returns the schema of field in the object at prefix, nil when the
// schema does not declare it.
func (s *Schema) prop(prefix, field string) *node {
	obj := s.object(prefix)
	if obj == nil {
		return nil
	}
	return s.resolve(obj.Properties[field])
}

// declared returns the schema of field in the object o decodes, nil when
// there is no schema (Problems.Check), and checks that a getter reading it
// as typ ("" any) agrees: the schema declares field, with typ as its only
// JSON type (an integer may also be a string of digits, see Int). A getter
// that disagrees is a build defect, so declared panics; the tests call
// every tool.
func (o *Object) declared(field, typ string) *node {
	s := o.probs.schema
	if s == nil {
		return nil
	}
	p := s.prop(o.prefix, field)
	if p == nil {
		panic(fmt.Sprintf("args: %s is not in the input schema", o.Name(field)))
	}
	types := p.types()
	if typ != "" && (!slices.Contains(types, typ) || slices.ContainsFunc(types, func(t string) bool {
		return t != typ && !(typ == "integer" && t == "string")
	})) {
		panic(fmt.Sprintf("args: %s: the decoder reads %s, the input schema declares %s", o.Name(field), typ, strings.Join(types, " or ")))
	}
	return p
}

// schemaDefault sets *v, a getter's default for field, to the schema's
// default when it declares one. A default that does not fit is a build
// defect, so it panics.
func (o *Object) schemaDefault(field string, v any) {
	if p := o.declared(field, ""); p != nil && p.Default != nil {
		if err := json.Unmarshal(p.Default, v); err != nil {
			panic(fmt.Sprintf("args: %s: the schema's default %s does not fit %T: %v", o.Name(field), p.Default, v, err))
		}
	}
}

// refuseMissing refuses each argument the object at prefix requires that
// the call did not send and no getter refused by name, so a call the
// schema calls invalid is never accepted.
func (s *Schema) refuseMissing(prefix string, sent map[string]json.RawMessage, probs *Problems) {
	obj := s.object(prefix)
	if obj == nil {
		return
	}
	for _, field := range obj.Required {
		name := prefix + field
		if _, ok := sent[field]; !ok && !slices.ContainsFunc(probs.list, func(p problem) bool { return p.field == name }) {
			probs.Addf(name, "required %s argument is missing", strings.Join(s.resolve(obj.Properties[field]).types(), " or "))
		}
	}
}
