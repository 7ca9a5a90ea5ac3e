package mcpserver

import (
	"strconv"
	"strings"
)

// boolean returns a boolean field, or def when it is absent.
func (o *object) boolean(field string, def bool) bool {
	raw, ok := o.value(field, "boolean", false)
	if !ok {
		return def
	}
	return string(raw) == "true"
}

// count returns an optional integer field within [lo, hi], or def when it
// is absent. Besides a JSON integer it accepts a string of decimal digits
// ("1048576"), because clients of the provider contract send sizes that way.
func (o *object) count(field string, def, lo, hi int64) int64 {
	raw, ok := o.raw(field)
	if !ok {
		return def
	}
	if jsonType(raw) == "string" {
		s, err := decodeString(raw)
		if err != nil {
			o.probs.add(o.name(field), err)
			return def
		}
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			o.probs.addf(o.name(field), "expected an integer (or a string of decimal digits), got %s", quote(s))
			return def
		}
		return o.bounded(field, n, lo, hi, def)
	}
	n, ok := o.integer(field, false, lo, hi)
	if !ok {
		return def
	}
	return n
}

// bounded checks n against [lo, hi] for field, returning def on a problem.
func (o *object) bounded(field string, n, lo, hi, def int64) int64 {
	switch {
	case n < lo:
		o.probs.addf(o.name(field), "%d is below the minimum %d", n, lo)
		return def
	case n > hi:
		o.probs.addf(o.name(field), "%d is above the maximum %d", n, hi)
		return def
	}
	return n
}

// choice returns an optional string field that must be one of choices, or
// def when it is absent. fold compares case-insensitively and returns the
// choice as listed.
func (o *object) choice(field, def string, fold bool, choices ...string) string {
	if !o.has(field) {
		return def
	}
	s, ok := o.str(field, false)
	if !ok {
		return def
	}
	for _, c := range choices {
		if s == c || fold && strings.EqualFold(s, c) {
			return c
		}
	}
	o.probs.addf(o.name(field), "must be one of %s, got %s", strings.Join(quoteAll(choices), ", "), quote(s))
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
