package args

import (
	"strconv"
	"strings"
)

// Bool returns a boolean field, or, when it is absent, the schema's
// default (def where the schema declares none).
func (o *Object) Bool(field string, def bool) bool {
	o.schemaDefault(field, &def)
	raw, ok := o.Value(field, "boolean", false)
	if !ok {
		return def
	}
	return string(raw) == "true"
}

// Count returns an optional integer field (see Int), or, when it is
// absent, the schema's default (def where the schema declares none).
func (o *Object) Count(field string, def int64) int64 {
	o.schemaDefault(field, &def)
	n, ok := o.Int(field, false)
	if !ok {
		return def
	}
	return n
}

// Choice returns an optional string field that must be one of the enum
// its input schema declares, or, when it is absent, the schema's default
// (def where the schema declares none).
func (o *Object) Choice(field, def string) string {
	o.schemaDefault(field, &def)
	choices := o.enum(field)
	s, ok := o.Str(field, false)
	if !ok {
		return def
	}
	for _, c := range choices {
		if s == c {
			return c
		}
	}
	o.probs.Addf(o.Name(field), "must be one of %s, got %s", strings.Join(quoteAll(choices), ", "), Quote(s))
	return def
}

// quoteAll quotes each string for a message.
func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
