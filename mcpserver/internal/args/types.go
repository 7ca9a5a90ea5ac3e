package args

import (
	"strconv"
	"strings"
)

// Bool returns a boolean field, or def when it is absent.
func (o *Object) Bool(field string, def bool) bool {
	raw, ok := o.Value(field, "boolean", false)
	if !ok {
		return def
	}
	return string(raw) == "true"
}

// Count returns an optional integer field within [lo, hi], or def when it
// is absent (see Int for the forms accepted).
func (o *Object) Count(field string, def, lo, hi int64) int64 {
	n, ok := o.Int(field, false, lo, hi)
	if !ok {
		return def
	}
	return n
}

// Choice returns an optional string field that must be one of choices, or
// def when it is absent. fold compares case-insensitively and returns the
// choice as listed.
func (o *Object) Choice(field, def string, fold bool, choices ...string) string {
	o.declare(field, accepts{typ: "string", choices: choices, fold: fold})
	s, ok := o.Str(field, false)
	if !ok {
		return def
	}
	for _, c := range choices {
		if s == c || fold && strings.EqualFold(s, c) {
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
