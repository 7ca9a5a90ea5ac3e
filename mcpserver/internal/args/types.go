package args

import (
	"strconv"
	"strings"
)

// Bool returns a boolean field, or def when it is absent; def must be the
// schema's default, when it declares one.
func (o *Object) Bool(field string, def bool) bool {
	o.declare(field, accepts{def: def})
	raw, ok := o.Value(field, "boolean", false)
	if !ok {
		return def
	}
	return string(raw) == "true"
}

// Count returns an optional integer field (see Int), or def when it is
// absent; def must be the schema's default, when it declares one.
func (o *Object) Count(field string, def int64) int64 {
	o.declare(field, accepts{def: def})
	n, ok := o.Int(field, false)
	if !ok {
		return def
	}
	return n
}

// Choice returns an optional string field that must be one of the enum
// its input schema declares, or def (the schema's default, when it
// declares one) when it is absent.
func (o *Object) Choice(field, def string) string {
	o.declare(field, accepts{def: def})
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
