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
// is absent. Besides a JSON integer it accepts a string of decimal digits
// ("1048576"), because clients of the provider contract send sizes that way.
func (o *Object) Count(field string, def, lo, hi int64) int64 {
	raw, ok := o.Raw(field)
	if !ok {
		return def
	}
	if JSONType(raw) == "string" {
		s, err := DecodeString(raw)
		if err != nil {
			o.probs.Add(o.Name(field), err)
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			o.probs.Addf(o.Name(field), "expected an integer (or a string of decimal digits), got %s", Quote(s))
			return def
		}
		return o.bounded(field, n, lo, hi, def)
	}
	n, ok := o.Int(field, false, lo, hi)
	if !ok {
		return def
	}
	return n
}

// bounded checks n against [lo, hi] for field, returning def on a problem.
func (o *Object) bounded(field string, n, lo, hi, def int64) int64 {
	switch {
	case n < lo:
		o.probs.Addf(o.Name(field), "%d is below the minimum %d", n, lo)
		return def
	case n > hi:
		o.probs.Addf(o.Name(field), "%d is above the maximum %d", n, hi)
		return def
	}
	return n
}

// Choice returns an optional string field that must be one of choices, or
// def when it is absent. fold compares case-insensitively and returns the
// choice as listed.
func (o *Object) Choice(field, def string, fold bool, choices ...string) string {
	if !o.Has(field) {
		return def
	}
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
