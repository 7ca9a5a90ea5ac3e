package markdown

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// arg is one row of a tool's argument table.
type arg struct {
	name        string // "path", or "entries[].name" for a field of array items
	typ         string // plain text: "string", "array of object", "string or number"
	required    bool
	def         string // the default as JSON, "" when none
	constraints string // Markdown
	description string // plain text
}

// schema is a JSON Schema object, its keywords in the order written.
type schema struct {
	keys []string
	kw   map[string]json.RawMessage
}

// parseSchema reads a JSON object keeping the order of its keys.
func parseSchema(raw json.RawMessage) (*schema, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("schema is not a JSON object")
	}
	s := &schema{kw: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if _, dup := s.kw[key]; !dup {
			s.keys = append(s.keys, key)
		}
		s.kw[key] = v
	}
	return s, nil
}

// str returns a string keyword, or "".
func (s *schema) str(key string) string {
	var v string
	_ = json.Unmarshal(s.kw[key], &v)
	return v
}

// walker expands an input schema into argument rows, resolving local
// references ("#/$defs/name", "#/definitions/name") against the root.
type walker struct {
	root *schema
	rows []arg
}

// arguments returns the rows of an input schema: each property of the
// top-level object, and below an object or array-of-objects property its
// own properties, named with a dotted path ("entries[].name"). A recursive
// reference is shown once and then named rather than expanded again.
func arguments(raw json.RawMessage) ([]arg, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	root, err := parseSchema(raw)
	if err != nil {
		return nil, err
	}
	w := &walker{root: root}
	if err := w.object(root, "", nil); err != nil {
		return nil, err
	}
	return w.rows, nil
}

// object adds the rows of the properties of object schema s, prefixed.
// seen holds the references being expanded, to stop recursion.
func (w *walker) object(s *schema, prefix string, seen []string) error {
	props := s.kw["properties"]
	if len(props) == 0 {
		return nil
	}
	ps, err := parseSchema(props)
	if err != nil {
		return fmt.Errorf("%sproperties: %w", prefix, err)
	}
	var required []string
	_ = json.Unmarshal(s.kw["required"], &required)
	for _, name := range ps.keys {
		p, ref, err := w.sub(ps.kw[name])
		if err != nil {
			return fmt.Errorf("%s%s: %w", prefix, name, err)
		}
		if err := w.property(prefix+name, p, ref, slices.Contains(required, name), seen); err != nil {
			return err
		}
	}
	return nil
}

// property adds the row of one property (p, resolved from the reference
// ref) and, for an object or an array of objects, the rows of its fields.
func (w *walker) property(name string, p *schema, ref string, required bool, seen []string) error {
	row := arg{name: name, required: required, description: p.str("description")}
	if d, ok := p.kw["default"]; ok {
		row.def = compact(d)
	}
	var err error
	row.typ, err = w.typeOf(p)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	row.constraints = constraints(p)

	// The schema whose fields follow: the property's own, or its items'.
	fields, fieldPrefix := p, name+"."
	itemRef := ""
	if items, ok := p.kw["items"]; ok {
		if fields, itemRef, err = w.sub(items); err != nil {
			return fmt.Errorf("%s: items: %w", name, err)
		}
		fieldPrefix = name + "[]."
		if c := constraints(fields); c != "" && row.constraints == "" {
			row.constraints = "items: " + c
		}
	}
	next := seen
	for _, r := range []string{ref, itemRef} {
		if r != "" && slices.Contains(seen, r) {
			row.description = strings.TrimSpace(row.description + " Same shape as its parent.")
			w.rows = append(w.rows, row)
			return nil
		} else if r != "" {
			next = append(slices.Clone(next), r)
		}
	}
	w.rows = append(w.rows, row)
	return w.object(fields, fieldPrefix, next)
}

// resolve follows a local $ref, returning the referenced schema and the
// reference ("" when s has none).
func (w *walker) resolve(s *schema) (*schema, string, error) {
	ref := s.str("$ref")
	if ref == "" {
		return s, "", nil
	}
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	defs := "$defs"
	if !ok {
		if name, ok = strings.CutPrefix(ref, "#/definitions/"); !ok {
			return nil, "", fmt.Errorf("unsupported reference %q", ref)
		}
		defs = "definitions"
	}
	var raw json.RawMessage
	if all, found := w.root.kw[defs]; found {
		ds, err := parseSchema(all)
		if err != nil {
			return nil, "", fmt.Errorf("reference %q: %w", ref, err)
		}
		raw = ds.kw[name]
	}
	if raw == nil {
		return nil, "", fmt.Errorf("reference %q: no such definition", ref)
	}
	target, err := parseSchema(raw)
	if err != nil {
		return nil, "", fmt.Errorf("reference %q: %w", ref, err)
	}
	return target, ref, nil
}

// sub parses the schema raw and follows its local $ref, if any (see
// resolve).
func (w *walker) sub(raw json.RawMessage) (*schema, string, error) {
	s, err := parseSchema(raw)
	if err != nil {
		return nil, "", err
	}
	return w.resolve(s)
}

// typeOf describes the type of a schema in words.
func (w *walker) typeOf(s *schema) (string, error) {
	var types []string
	if raw, ok := s.kw["type"]; ok {
		var one string
		if json.Unmarshal(raw, &one) == nil {
			types = []string{one}
		} else if err := json.Unmarshal(raw, &types); err != nil {
			return "", fmt.Errorf("type: %w", err)
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var alts []json.RawMessage
		if json.Unmarshal(s.kw[key], &alts) != nil {
			continue
		}
		for _, alt := range alts {
			as, _, err := w.sub(alt)
			if err != nil {
				return "", fmt.Errorf("%s: %w", key, err)
			}
			t, err := w.typeOf(as)
			if err != nil {
				return "", err
			}
			types = append(types, t)
		}
	}
	if len(types) == 0 {
		if _, ok := s.kw["enum"]; ok {
			return "enum", nil
		}
		return "any", nil
	}
	for i, t := range types {
		if t != "array" {
			continue
		}
		items, ok := s.kw["items"]
		if !ok {
			continue
		}
		is, _, err := w.sub(items)
		if err != nil {
			return "", fmt.Errorf("items: %w", err)
		}
		it, err := w.typeOf(is)
		if err != nil {
			return "", err
		}
		types[i] = "array of " + it
	}
	return strings.Join(types, " or "), nil
}

// constraints describes a schema's validation keywords in Markdown.
func constraints(s *schema) string {
	var parts []string
	if raw, ok := s.kw["const"]; ok {
		parts = append(parts, "exactly "+code(compact(raw)))
	}
	var enum []json.RawMessage
	if json.Unmarshal(s.kw["enum"], &enum) == nil && len(enum) > 0 {
		vals := make([]string, len(enum))
		for i, v := range enum {
			vals[i] = code(compact(v))
		}
		parts = append(parts, "one of "+strings.Join(vals, ", "))
	}
	if p := s.str("pattern"); p != "" {
		parts = append(parts, "matches "+code(p))
	}
	if f := s.str("format"); f != "" {
		parts = append(parts, "format "+code(f))
	}
	parts = appendRange(parts, s, "length", "minLength", "maxLength")
	parts = appendRange(parts, s, "value", "minimum", "maximum")
	for _, bound := range [...]struct{ key, op string }{{"exclusiveMinimum", ">"}, {"exclusiveMaximum", "<"}} {
		if raw, ok := s.kw[bound.key]; ok {
			parts = append(parts, fmt.Sprintf("value %s %s", bound.op, compact(raw)))
		}
	}
	parts = appendRange(parts, s, "items", "minItems", "maxItems")
	if string(s.kw["uniqueItems"]) == "true" {
		parts = append(parts, "unique items")
	}
	return strings.Join(parts, "; ")
}

// appendRange describes a pair of bounds: "length 1 to 255", "value ≥ 0".
func appendRange(parts []string, s *schema, what, minKey, maxKey string) []string {
	lo, hasLo := s.kw[minKey]
	hi, hasHi := s.kw[maxKey]
	switch {
	case hasLo && hasHi:
		return append(parts, fmt.Sprintf("%s %s to %s", what, compact(lo), compact(hi)))
	case hasLo:
		return append(parts, fmt.Sprintf("%s ≥ %s", what, compact(lo)))
	case hasHi:
		return append(parts, fmt.Sprintf("%s ≤ %s", what, compact(hi)))
	}
	return parts
}

// compact returns a JSON value on one line; a number keeps its written form.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return strconv.Quote(string(raw))
	}
	return b.String()
}
